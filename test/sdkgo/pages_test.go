package sdk_test

import (
	"fmt"
	"testing"

	"connectrpc.com/connect"

	"better-compute.dev/compute/app/apptest"
	v1 "better-compute.dev/compute/gen/go/bettercompute/compute/v1"
	sdk "better-compute.dev/compute/sdk/go"
)

// TestLoadBalancerPages: the iterator walks every page in creation order and stops when asked.
func TestLoadBalancerPages(t *testing.T) {
	s := apptest.Start(t)
	tn := s.NewTenant(t, "acme", "editor")
	if _, err := s.App.Service.SetQuota(s.AdminCtx, &v1.SetQuotaRequest{TenantId: tn.ID, PoolId: tn.PoolID, Resource: "loadBalancers", Limit: 20}); err != nil {
		t.Fatal(err)
	}
	c := sdk.New(s.App.URL, tn.Token)
	pool := true
	var want []string
	for i := range 7 {
		resp, err := c.LoadBalancers.CreateLoadBalancer(t.Context(), connect.NewRequest(&v1.CreateLoadBalancerRequest{
			TenantId: tn.ID, PoolId: tn.PoolID, Name: fmt.Sprintf("web-%d", i), Region: "nyc3", Targets: &v1.LoadBalancerTargets{Pool: &pool},
			Forwarding:     []*v1.ForwardingRule{{EntryProtocol: "http", EntryPort: 80, TargetProtocol: "http", TargetPort: 80}},
			IdempotencyKey: fmt.Sprintf("pages-%d", i)}))
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, resp.Msg.GetLoadBalancer().GetId())
	}
	req := &v1.ListLoadBalancersRequest{TenantId: tn.ID, PageSize: 3}
	var got []string
	for lb, err := range sdk.LoadBalancerPages(t.Context(), c.LoadBalancers, req) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, lb.GetId())
	}
	if fmt.Sprint(got) != fmt.Sprint(want) || req.GetPageToken() != "" {
		t.Fatalf("got %v, want %v (request token %q)", got, want, req.GetPageToken())
	}
	n := 0
	for range sdk.LoadBalancerPages(t.Context(), c.LoadBalancers, req) {
		if n++; n == 4 {
			break
		}
	}
	bad := &v1.ListLoadBalancersRequest{TenantId: tn.ID, PageSize: 3000}
	for _, err := range sdk.LoadBalancerPages(t.Context(), c.LoadBalancers, bad) {
		if pe, ok := sdk.AsError(err); !ok || pe.Code != sdk.InvalidInput || pe.Field != "pageSize" {
			t.Fatalf("pageSize 3000: %v", err)
		}
	}
}
