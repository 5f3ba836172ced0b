package vps_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	v1 "better-compute.dev/compute/gen/go/bettercompute/compute/v1"
)

// TestSettingsReachProvider: the provider receives exactly the settings a create asked for
// (read from the simulator's stored load balancer), labels as sorted "key:value" tags; one that
// asked for none holds DigitalOcean's defaults and no tag; an update's settings reach it; and a
// second size change within the hour is refused by the provider, kept as the load balancer's
// lastError while it stays updating (retried, not failed), the provider's size unchanged.
func TestSettingsReachProvider(t *testing.T) {
	e := newEnv(t, "settings", 10)
	req := e.lbRequest("tuned", pool())
	req.SizeUnit, req.HttpIdleTimeoutSeconds = proto.Int32(3), proto.Int32(120)
	req.EnableProxyProtocol, req.EnableBackendKeepalive, req.DisableLetsEncryptDnsRecords = true, true, true
	req.Network = v1.LoadBalancerNetwork_LOAD_BALANCER_NETWORK_INTERNAL
	req.NetworkStack = v1.LoadBalancerNetworkStack_LOAD_BALANCER_NETWORK_STACK_DUALSTACK
	req.TlsCipherPolicy = v1.LoadBalancerTlsCipherPolicy_LOAD_BALANCER_TLS_CIPHER_POLICY_STRONG
	req.Labels = map[string]string{"team": "web", "env": "prod", "canary": ""}
	tuned := e.createLB(t, req)
	plain := e.createLB(t, e.lbRequest("plain", pool()))
	tunedRow := e.waitState(t, tuned.GetId(), "ready")
	plainRow := e.waitState(t, plain.GetId(), "ready")

	at, _ := e.providerLB(t, tunedRow.ProviderID)
	got := fmt.Sprintf("size %d idle %d proxy %v keepalive %v network %s stack %s cipher %s noLEDNS %v tags %v",
		at.SizeUnit, deref(at.HTTPIdleTimeoutSeconds), at.EnableProxyProtocol, at.EnableBackendKeepalive, at.Network,
		at.NetworkStack, at.TLSCipherPolicy, deref(at.DisableLetsEncryptDNSRecords), at.Tags)
	want := "size 3 idle 120 proxy true keepalive true network INTERNAL stack DUALSTACK cipher STRONG noLEDNS true tags [canary env:prod team:web]"
	if got != want {
		t.Errorf("the provider holds\n%s\nwant\n%s", got, want)
	}
	at, _ = e.providerLB(t, plainRow.ProviderID)
	got = fmt.Sprintf("size %d idle %d proxy %v keepalive %v network %s stack %s cipher %s noLEDNS %v tags %v",
		at.SizeUnit, deref(at.HTTPIdleTimeoutSeconds), at.EnableProxyProtocol, at.EnableBackendKeepalive, at.Network,
		at.NetworkStack, at.TLSCipherPolicy, deref(at.DisableLetsEncryptDNSRecords), at.Tags)
	want = "size 1 idle 60 proxy false keepalive false network EXTERNAL stack IPV4 cipher DEFAULT noLEDNS false tags []"
	if got != want {
		t.Errorf("the provider holds for a load balancer with no settings\n%s\nwant\n%s", got, want)
	}

	svc := e.s.App
	update := func(r *v1.UpdateLoadBalancerRequest) {
		t.Helper()
		r.TenantId, r.LoadBalancerId = e.tn.ID, tuned.GetId()
		if _, err := svc.LoadBalancers.UpdateLoadBalancer(e.tn.Ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	update(&v1.UpdateLoadBalancerRequest{SizeUnit: proto.Int32(4), HttpIdleTimeoutSeconds: proto.Int32(200),
		EnableProxyProtocol: proto.Bool(false)})
	eventually(t, "the update applied", func() (bool, string) {
		row := e.lbRow(t, tuned.GetId())
		return row.State == "ready" && row.AppliedVersion >= row.SpecVersion, fmt.Sprintf("%s %d/%d", row.State, row.AppliedVersion, row.SpecVersion)
	})
	at, _ = e.providerLB(t, tunedRow.ProviderID)
	if at.SizeUnit != 4 || deref(at.HTTPIdleTimeoutSeconds) != 200 || at.EnableProxyProtocol || !at.EnableBackendKeepalive ||
		at.Network != "INTERNAL" || !slices.Equal(at.Tags, []string{"canary", "env:prod", "team:web"}) {
		t.Errorf("after the update the provider holds %+v", at)
	}

	update(&v1.UpdateLoadBalancerRequest{SizeUnit: proto.Int32(6)})
	eventually(t, "the second resize refused as too soon", func() (bool, string) {
		row := e.lbRow(t, tuned.GetId())
		return row.State == "updating" && strings.Contains(row.LastError, "once per hour"), fmt.Sprintf("%s %q", row.State, row.LastError)
	})
	if at, _ = e.providerLB(t, tunedRow.ProviderID); at.SizeUnit != 4 {
		t.Errorf("the refused resize changed the provider's size to %d", at.SizeUnit)
	}
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
