module better-compute.dev/compute/gen/go

go 1.24.0

require (
	buf.build/gen/go/bufbuild/protovalidate/protocolbuffers/go v1.36.12-20260825204119-511051f7f437.1
	connectrpc.com/connect v1.19.1
	google.golang.org/protobuf v1.36.12
)
