package sdk_test

import (
	"maps"
	"slices"
	"testing"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"

	"better-compute.dev/compute/app/apptest"
	v1 "better-compute.dev/compute/gen/go/bettercompute/compute/v1"
	sdk "better-compute.dev/compute/sdk/go"
)

// TestLoadBalancerSettingsThroughSDK: the provider settings travel through the Go SDK: a create
// gives them, get returns them, MaskedUpdate names the ones a request sets (and the ones to
// return to the default), and a create-only one with another value is INVALID_INPUT naming it.
func TestLoadBalancerSettingsThroughSDK(t *testing.T) {
	s := apptest.Start(t)
	tn := s.NewTenant(t, "tuned", "editor")
	c := sdk.New(s.App.URL, tn.Token)
	pool := true
	resp, err := c.LoadBalancers.CreateLoadBalancer(t.Context(), connect.NewRequest(&v1.CreateLoadBalancerRequest{
		TenantId: tn.ID, PoolId: tn.PoolID, Name: "web", Region: "nyc3", Targets: &v1.LoadBalancerTargets{Pool: &pool},
		Forwarding:     []*v1.ForwardingRule{{EntryProtocol: "http", EntryPort: 80, TargetProtocol: "http", TargetPort: 80}},
		IdempotencyKey: "sdk-settings", SizeUnit: proto.Int32(2), HttpIdleTimeoutSeconds: proto.Int32(300),
		EnableBackendKeepalive: true, Network: v1.LoadBalancerNetwork_LOAD_BALANCER_NETWORK_INTERNAL,
		TlsCipherPolicy: v1.LoadBalancerTlsCipherPolicy_LOAD_BALANCER_TLS_CIPHER_POLICY_STRONG,
		Labels:          map[string]string{"team": "web"},
	}))
	if err != nil {
		t.Fatal(err)
	}
	id := resp.Msg.GetLoadBalancer().GetId()
	got, err := c.LoadBalancers.GetLoadBalancer(t.Context(), connect.NewRequest(&v1.GetLoadBalancerRequest{TenantId: tn.ID, LoadBalancerId: id}))
	if err != nil {
		t.Fatal(err)
	}
	lb := got.Msg.GetLoadBalancer()
	if lb.GetSizeUnit() != 2 || lb.GetHttpIdleTimeoutSeconds() != 300 || !lb.GetEnableBackendKeepalive() || lb.GetEnableProxyProtocol() ||
		lb.GetNetwork() != v1.LoadBalancerNetwork_LOAD_BALANCER_NETWORK_INTERNAL ||
		lb.GetNetworkStack() != v1.LoadBalancerNetworkStack_LOAD_BALANCER_NETWORK_STACK_UNSPECIFIED ||
		lb.GetTlsCipherPolicy() != v1.LoadBalancerTlsCipherPolicy_LOAD_BALANCER_TLS_CIPHER_POLICY_STRONG ||
		!maps.Equal(lb.GetLabels(), map[string]string{"team": "web"}) {
		t.Fatalf("get: %v", lb)
	}

	req := sdk.MaskedUpdate(&v1.UpdateLoadBalancerRequest{TenantId: tn.ID, LoadBalancerId: id,
		SizeUnit: proto.Int32(4), EnableProxyProtocol: proto.Bool(true)}, sdk.PartHTTPIdleTimeoutSeconds)
	if want := []string{sdk.PartSizeUnit, sdk.PartEnableProxyProtocol, sdk.PartHTTPIdleTimeoutSeconds}; !slices.Equal(req.GetUpdateMask().GetPaths(), want) {
		t.Fatalf("mask %v, want %v", req.GetUpdateMask().GetPaths(), want)
	}
	up, err := c.LoadBalancers.UpdateLoadBalancer(t.Context(), connect.NewRequest(req))
	if err != nil {
		t.Fatal(err)
	}
	lb = up.Msg.GetLoadBalancer()
	if lb.GetSizeUnit() != 4 || !lb.GetEnableProxyProtocol() || lb.HttpIdleTimeoutSeconds != nil || !lb.GetEnableBackendKeepalive() {
		t.Fatalf("after update: %v", lb)
	}

	for part, req := range map[string]*v1.UpdateLoadBalancerRequest{
		"network":      {Network: v1.LoadBalancerNetwork_LOAD_BALANCER_NETWORK_EXTERNAL.Enum()},
		"networkStack": {NetworkStack: v1.LoadBalancerNetworkStack_LOAD_BALANCER_NETWORK_STACK_DUALSTACK.Enum()},
		"labels":       {Labels: map[string]string{"team": "api"}},
	} {
		req.TenantId, req.LoadBalancerId = tn.ID, id
		_, err := c.LoadBalancers.UpdateLoadBalancer(t.Context(), connect.NewRequest(sdk.MaskedUpdate(req)))
		if pe, ok := sdk.AsError(err); !ok || pe.Code != sdk.InvalidInput || pe.Field != part {
			t.Errorf("update of create-only %s: %v, want INVALID_INPUT %s", part, err, part)
		}
	}
	_, err = c.LoadBalancers.UpdateLoadBalancer(t.Context(), connect.NewRequest(sdk.MaskedUpdate(&v1.UpdateLoadBalancerRequest{
		TenantId: tn.ID, LoadBalancerId: id, SizeUnit: proto.Int32(0)})))
	if pe, ok := sdk.AsError(err); !ok || pe.Code != sdk.InvalidInput || pe.Field != "sizeUnit" {
		t.Errorf("update sizeUnit 0: %v, want INVALID_INPUT sizeUnit", err)
	}
}
