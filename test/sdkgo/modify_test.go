package sdk_test

import (
	"testing"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"

	"better-compute.dev/compute/app/apptest"
	v1 "better-compute.dev/compute/gen/go/bettercompute/compute/v1"
	sdk "better-compute.dev/compute/sdk/go"
)

// TestModifyLoadBalancerRetriesOnAStaleEtag: another writer changes the load balancer between
// the helper's read and its update; the update is refused etagMismatch, the helper reads again
// and applies its change on top of the other writer's, so neither change is lost.
func TestModifyLoadBalancerRetriesOnAStaleEtag(t *testing.T) {
	s := apptest.Start(t)
	tn := s.NewTenant(t, "rmw", "editor")
	c := sdk.New(s.App.URL, tn.Token)
	resp, err := c.LoadBalancers.CreateLoadBalancer(t.Context(), connect.NewRequest(&v1.CreateLoadBalancerRequest{
		TenantId: tn.ID, PoolId: tn.PoolID, Name: "web", Region: "nyc3", Targets: &v1.LoadBalancerTargets{Pool: proto.Bool(true)},
		Forwarding:     []*v1.ForwardingRule{{EntryProtocol: "http", EntryPort: 80, TargetProtocol: "http", TargetPort: 80}},
		IdempotencyKey: "sdk-rmw"}))
	if err != nil {
		t.Fatal(err)
	}
	id := resp.Msg.GetLoadBalancer().GetId()
	calls := 0
	got, err := sdk.ModifyLoadBalancer(t.Context(), c.LoadBalancers, tn.ID, id, func(cur *v1.LoadBalancer, req *v1.UpdateLoadBalancerRequest) error {
		calls++
		if calls == 1 {
			// The other writer: lands after this read, before this update.
			if _, err := c.LoadBalancers.UpdateLoadBalancer(t.Context(), connect.NewRequest(sdk.MaskedUpdate(&v1.UpdateLoadBalancerRequest{
				TenantId: tn.ID, LoadBalancerId: id, RedirectHttpToHttps: proto.Bool(true)}))); err != nil {
				return err
			}
		}
		// Add a rule to what was read.
		req.Forwarding = append(cur.GetForwarding(), &v1.ForwardingRule{EntryProtocol: "http", EntryPort: 8080, TargetProtocol: "http", TargetPort: 80})
		req.DeletionProtection = proto.Bool(true)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if calls != 2 {
		t.Errorf("change was called %d times, want 2 (one refused for its stale etag)", calls)
	}
	if !got.GetRedirectHttpToHttps() || len(got.GetForwarding()) != 2 || !got.GetDeletionProtection() {
		t.Errorf("answer %v: want the other writer's redirect, two rules and protection", got)
	}
	// Protected: delete is refused with the reason an SDK caller can test.
	_, err = c.LoadBalancers.DeleteLoadBalancer(t.Context(), connect.NewRequest(&v1.DeleteLoadBalancerRequest{TenantId: tn.ID, LoadBalancerId: id}))
	if pe, ok := sdk.AsError(err); !ok || pe.Code != sdk.InvalidState || pe.StateReason != "deletionProtected" {
		t.Errorf("delete of a protected load balancer: %v, want INVALID_STATE deletionProtected", err)
	}
	// validateOnly through the SDK writes nothing.
	_, err = c.LoadBalancers.UpdateLoadBalancer(t.Context(), connect.NewRequest(sdk.MaskedUpdate(&v1.UpdateLoadBalancerRequest{
		TenantId: tn.ID, LoadBalancerId: id, DeletionProtection: proto.Bool(false), ValidateOnly: true})))
	if err != nil {
		t.Fatal(err)
	}
	cur, err := c.LoadBalancers.GetLoadBalancer(t.Context(), connect.NewRequest(&v1.GetLoadBalancerRequest{TenantId: tn.ID, LoadBalancerId: id}))
	if err != nil || !cur.Msg.GetLoadBalancer().GetDeletionProtection() || cur.Msg.GetLoadBalancer().GetEtag() != got.GetEtag() {
		t.Errorf("after a validateOnly update: %v %v, want it unchanged", cur.Msg.GetLoadBalancer(), err)
	}
}
