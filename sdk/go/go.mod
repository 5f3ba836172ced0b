module better-compute.dev/compute/sdk/go

go 1.24.0

require (
	better-compute.dev/compute/gen/go v0.1.0
	connectrpc.com/connect v1.19.1
	google.golang.org/genproto/googleapis/rpc v0.0.0-20250811230008-5f3141c8851a
	google.golang.org/protobuf v1.36.12
)

require buf.build/gen/go/bufbuild/protovalidate/protocolbuffers/go v1.36.12-20260825204119-511051f7f437.1

// In this repository the SDK builds against the generated code beside it. A client's build
// ignores this line and uses the tagged gen/go release required above.
replace better-compute.dev/compute/gen/go => ../../gen/go
