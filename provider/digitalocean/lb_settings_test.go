package digitalocean

import (
	"errors"
	"slices"
	"testing"
	"time"

	"better-compute.dev/compute/provider"
	"better-compute.dev/compute/provider/digitalocean/sim"
)

// TestLoadBalancerSettingsThroughGodo: the settings of a spec reach the provider in
// DigitalOcean's spelling and come back in the observation; tags are sent on create and kept
// by an update; an update that resizes within the hour of the previous resize is ErrTooSoon
// (retryable: the same request succeeds later), not ErrInvalid.
func TestLoadBalancerSettingsThroughGodo(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sim.Options{}, Options{}, true)
	lbs := e.p.LoadBalancers()
	spec := provider.LoadBalancerSpec{Name: "tuned", Region: "nyc3", MachineIDs: []string{e.droplet(t, "web", "nyc3", "")},
		Forwarding: []provider.ForwardingRule{{EntryProtocol: "http", EntryPort: 80, TargetProtocol: "http", TargetPort: 80}},
		SizeUnit:   2, HTTPIdleTimeoutSeconds: 90, EnableProxyProtocol: true, EnableBackendKeepalive: true,
		Network: "internal", NetworkStack: "dualstack", TLSCipherPolicy: "strong", DisableLetsEncryptDNSRecords: true,
		Tags: []string{"env:prod", "team:web"},
	}
	lb, err := lbs.Create(bg(), spec)
	if err != nil {
		t.Fatal(err)
	}
	got := lb.Spec
	if got.SizeUnit != 2 || got.HTTPIdleTimeoutSeconds != 90 || !got.EnableProxyProtocol || !got.EnableBackendKeepalive ||
		got.Network != "internal" || got.NetworkStack != "dualstack" || got.TLSCipherPolicy != "strong" ||
		!got.DisableLetsEncryptDNSRecords || !slices.Equal(got.Tags, spec.Tags) {
		t.Fatalf("observed after create: %+v", got)
	}
	e.clock.Advance(time.Minute)
	spec.SizeUnit, spec.Tags = 3, nil
	if lb, err = lbs.Update(bg(), lb.ID, spec); err != nil {
		t.Fatalf("first resize: %v", err)
	}
	if lb.Spec.SizeUnit != 3 || !slices.Equal(lb.Spec.Tags, []string{"env:prod", "team:web"}) {
		t.Errorf("after the update: size %d tags %v", lb.Spec.SizeUnit, lb.Spec.Tags)
	}
	e.clock.Advance(time.Minute)
	spec.SizeUnit = 4
	_, err = lbs.Update(bg(), lb.ID, spec)
	if !errors.Is(err, provider.ErrTooSoon) || errors.Is(err, provider.ErrInvalid) || !provider.Retryable(err) {
		t.Fatalf("a second resize within the hour: %v, want ErrTooSoon", err)
	}
	e.clock.Advance(time.Hour)
	if lb, err = lbs.Update(bg(), lb.ID, spec); err != nil || lb.Spec.SizeUnit != 4 {
		t.Errorf("the same resize an hour later: %v %v", lb, err)
	}
}
