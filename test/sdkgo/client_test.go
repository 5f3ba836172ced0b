package sdk_test

import (
	"testing"

	"connectrpc.com/connect"

	"better-compute.dev/compute/app/apptest"
	v1 "better-compute.dev/compute/gen/go/bettercompute/compute/v1"
	sdk "better-compute.dev/compute/sdk/go"
)

// TestClient calls a running server through the SDK and reads a platform error back.
func TestClient(t *testing.T) {
	s := apptest.Start(t)
	tn := s.NewTenant(t, "acme", "editor")
	c := sdk.New(s.App.URL, tn.Token)
	pool := true
	req := &v1.CreateLoadBalancerRequest{TenantId: tn.ID, PoolId: tn.PoolID, Name: "web", Region: "nyc3",
		Targets:        &v1.LoadBalancerTargets{Pool: &pool},
		Forwarding:     []*v1.ForwardingRule{{EntryProtocol: "http", EntryPort: 80, TargetProtocol: "http", TargetPort: 80}},
		IdempotencyKey: "sdk-1"}
	resp, err := c.LoadBalancers.CreateLoadBalancer(t.Context(), connect.NewRequest(req))
	if err != nil || resp.Msg.GetLoadBalancer().GetState() != "pending" {
		t.Fatalf("%v %v", resp, err)
	}
	req.Name = "Bad_Name"
	_, err = c.LoadBalancers.CreateLoadBalancer(t.Context(), connect.NewRequest(req))
	pe, ok := sdk.AsError(err)
	if !ok || pe.Code != sdk.InvalidInput || pe.Field != "name" {
		t.Fatalf("%+v", pe)
	}
	_, err = sdk.New(s.App.URL, "bct_unknown").LoadBalancers.ListLoadBalancers(t.Context(), connect.NewRequest(&v1.ListLoadBalancersRequest{TenantId: tn.ID}))
	if pe, ok := sdk.AsError(err); !ok || pe.Code != sdk.Unauthenticated {
		t.Fatalf("%v", err)
	}
}
