package sdk_test

import (
	"slices"
	"testing"

	"connectrpc.com/connect"

	"better-compute.dev/compute/app/apptest"
	v1 "better-compute.dev/compute/gen/go/bettercompute/compute/v1"
	sdk "better-compute.dev/compute/sdk/go"
)

// TestMaskedUpdate: the parts a request sets, plus the ones named to clear, become its mask;
// the server then replaces exactly those and leaves the rest.
func TestMaskedUpdate(t *testing.T) {
	s := apptest.Start(t)
	tn := s.NewTenant(t, "acme", "editor")
	c := sdk.New(s.App.URL, tn.Token)
	pool := true
	resp, err := c.LoadBalancers.CreateLoadBalancer(t.Context(), connect.NewRequest(&v1.CreateLoadBalancerRequest{
		TenantId: tn.ID, PoolId: tn.PoolID, Name: "web", Region: "nyc3", Targets: &v1.LoadBalancerTargets{Pool: &pool},
		Forwarding:     []*v1.ForwardingRule{{EntryProtocol: "http", EntryPort: 80, TargetProtocol: "http", TargetPort: 80}},
		HealthCheck:    &v1.HealthCheck{Protocol: "tcp", Port: 80},
		StickySessions: &v1.StickySessions{CookieName: "lb", TtlSeconds: 60},
		IdempotencyKey: "sdk-mask"}))
	if err != nil {
		t.Fatal(err)
	}
	id := resp.Msg.GetLoadBalancer().GetId()
	yes := true
	req := sdk.MaskedUpdate(&v1.UpdateLoadBalancerRequest{TenantId: tn.ID, LoadBalancerId: id, RedirectHttpToHttps: &yes}, sdk.PartHealthCheck)
	if !slices.Equal(req.GetUpdateMask().GetPaths(), []string{sdk.PartRedirectHTTPToHTTPS, sdk.PartHealthCheck}) {
		t.Fatalf("mask %v", req.GetUpdateMask().GetPaths())
	}
	up, err := c.LoadBalancers.UpdateLoadBalancer(t.Context(), connect.NewRequest(req))
	if err != nil {
		t.Fatal(err)
	}
	lb := up.Msg.GetLoadBalancer()
	if lb.GetHealthCheck() != nil || lb.GetStickySessions().GetCookieName() != "lb" || !lb.GetRedirectHttpToHttps() {
		t.Fatalf("after masked update: %v", lb)
	}
	_, err = c.LoadBalancers.UpdateLoadBalancer(t.Context(), connect.NewRequest(sdk.MaskedUpdate(
		&v1.UpdateLoadBalancerRequest{TenantId: tn.ID, LoadBalancerId: id}, "name")))
	if pe, ok := sdk.AsError(err); !ok || pe.Code != sdk.InvalidInput || pe.Field != "updateMask" {
		t.Fatalf("unknown path: %v", err)
	}
}
