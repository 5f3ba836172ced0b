package apierr_test

import (
	"slices"
	"testing"

	"better-compute.dev/compute/apierr"
	v1 "better-compute.dev/compute/gen/go/bettercompute/compute/v1"
	"better-compute.dev/compute/gen/go/bettercompute/compute/v1/errcode"
)

// TestReasonsAreErrorsProtos: the named reasons are exactly errors.proto's ErrorReason values
// (without the ERROR_REASON_ prefix and the never-sent UNSPECIFIED), each under its own name.
func TestReasonsAreErrorsProtos(t *testing.T) {
	named := map[apierr.Code]string{
		errcode.InvalidInput:    "INVALID_INPUT",
		errcode.NotFound:        "NOT_FOUND",
		errcode.AccessDenied:    "ACCESS_DENIED",
		errcode.QuotaExceeded:   "QUOTA_EXCEEDED",
		errcode.InvalidState:    "INVALID_STATE",
		errcode.Unauthenticated: "UNAUTHENTICATED",
		errcode.Unavailable:     "UNAVAILABLE",
		errcode.Internal:        "INTERNAL",
	}
	var proto []apierr.Code
	for number, name := range v1.ErrorReason_name {
		if number != 0 {
			proto = append(proto, apierr.Code(name[len("ERROR_REASON_"):]))
		}
	}
	for code, want := range named {
		if string(code) != want {
			t.Errorf("reason %q is named %q", want, code)
		}
		if !slices.Contains(proto, code) {
			t.Errorf("%s is not a value of errors.proto's ErrorReason", code)
		}
	}
	if len(named) != len(proto) {
		t.Errorf("errors.proto has %d reasons (%v), apierr names %d", len(proto), proto, len(named))
	}
	codes := apierr.Codes()
	slices.Sort(codes)
	slices.Sort(proto)
	if !slices.Equal(codes, proto) {
		t.Errorf("Codes() = %v, errors.proto has %v", codes, proto)
	}
	if apierr.ReasonCode(v1.ErrorReason_ERROR_REASON_UNSPECIFIED) != "" {
		t.Error("UNSPECIFIED has a code")
	}
}
