package openapi

import (
	"slices"
	"strings"
	"testing"

	v1 "better-compute.dev/compute/gen/go/bettercompute/compute/v1"
)

// TestUpdateMaskRuleListsTheRequestsSettings: the updateMask rule the document states names
// exactly UpdateLoadBalancerRequest's fields other than the call's own (by their JSON names), so
// the list written out in rules.go cannot drift from the proto.
func TestUpdateMaskRuleListsTheRequestsSettings(t *testing.T) {
	call := []string{"tenant_id", "load_balancer_id", "update_mask", "etag", "validate_only"}
	fields := (&v1.UpdateLoadBalancerRequest{}).ProtoReflect().Descriptor().Fields()
	var want []string
	for i := range fields.Len() {
		if fd := fields.Get(i); !slices.Contains(call, string(fd.Name())) {
			want = append(want, fd.JSONName())
		}
	}
	var got []string
	for _, r := range serverRules["UpdateLoadBalancerRequest"] {
		if r.Field == "updateMask" {
			_, list, ok := strings.Cut(r.Rule, ": ")
			if !ok {
				t.Fatalf("the updateMask rule lists no parts: %q", r.Rule)
			}
			got = strings.Split(list, ", ")
		}
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("the updateMask rule names %v, want the request's settings %v", got, want)
	}
}
