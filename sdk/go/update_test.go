package sdk

import (
	"slices"
	"testing"

	v1 "better-compute.dev/compute/gen/go/bettercompute/compute/v1"
)

// callFields qualify the call rather than name a part of the load balancer (the server keeps the
// same list: core/loadbalancers lbUpdateCallFields).
var callFields = []string{"tenant_id", "load_balancer_id", "update_mask", "etag", "validate_only"}

// TestUpdatePartsAreTheRequestsFields: the SDK's parts are exactly UpdateLoadBalancerRequest's
// fields other than the call's own, so a setting added to the proto cannot be missing here (where
// MaskedUpdate would silently leave it out of the mask) or named here after it is gone.
func TestUpdatePartsAreTheRequestsFields(t *testing.T) {
	fields := (&v1.UpdateLoadBalancerRequest{}).ProtoReflect().Descriptor().Fields()
	var want []string
	for i := range fields.Len() {
		if name := string(fields.Get(i).Name()); !slices.Contains(callFields, name) {
			want = append(want, name)
		}
	}
	got := slices.Clone(updateParts)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("the SDK's parts %v, want the request's settings %v", got, want)
	}
}
