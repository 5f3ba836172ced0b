package server

import (
	"errors"
	"testing"

	"buf.build/go/protovalidate"
	"connectrpc.com/connect"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"better-compute.dev/compute/apierr"
	v1 "better-compute.dev/compute/gen/go/bettercompute/compute/v1"
	sdk "better-compute.dev/compute/sdk/go"
)

// TestEveryReasonHasItsCodes: every reason of errors.proto has a Connect code and an HTTP status.
func TestEveryReasonHasItsCodes(t *testing.T) {
	for _, code := range apierr.Codes() {
		if _, ok := connectCode[code]; !ok {
			t.Errorf("%s has no Connect code", code)
		}
		if _, ok := httpStatus[code]; !ok {
			t.Errorf("%s has no HTTP status", code)
		}
	}
	if len(connectCode) != len(apierr.Codes()) || len(httpStatus) != len(apierr.Codes()) {
		t.Errorf("%d reasons, %d Connect codes, %d HTTP statuses", len(apierr.Codes()), len(connectCode), len(httpStatus))
	}
}

// TestServerAndSDKReadAlike: the JSON mapping's reason for an answer without a platform error is
// the Go SDK's for the same code, and the server names a violation's field as the SDK does.
func TestServerAndSDKReadAlike(t *testing.T) {
	for code := connect.Code(1); code <= connect.CodeUnauthenticated; code++ {
		if got, want := reasonOfConnectCode(code), apierr.Code(sdk.ReasonForCode(code)); got != want {
			t.Errorf("%s: server %s, SDK %s", code, got, want)
		}
	}
	validator, err := protovalidate.New()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		msg  proto.Message
		json string
	}{
		{&v1.CreateLoadBalancerRequest{}, `{"forwarding": [{"entryProtocol": "http", "entryPort": 80}, {"entryPort": 70000, "targetPort": -1}], "name": "x y"}`},
		{&v1.CreateLoadBalancerRequest{}, `{}`},
		{&v1.ListLoadBalancersRequest{}, `{"pageSize": -3}`},
	} {
		if err := protojson.Unmarshal([]byte(c.json), c.msg); err != nil {
			t.Fatal(err)
		}
		var ve *protovalidate.ValidationError
		if !errors.As(validator.Validate(c.msg), &ve) || len(ve.Violations) == 0 {
			t.Fatalf("%s is valid", c.json)
		}
		for _, v := range ve.Violations {
			got, want := violationPath(c.msg.ProtoReflect().Descriptor(), v.Proto), sdk.ViolationField(v.Proto)
			if got != want || got == "" {
				t.Errorf("%s: server names %q, SDK %q", c.json, got, want)
			}
		}
	}
}
