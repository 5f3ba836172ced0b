package vps

import (
	"slices"
	"testing"

	"better-compute.dev/compute/provider"
	"better-compute.dev/compute/store"
)

func TestLBDrift(t *testing.T) {
	t.Parallel()
	want := provider.LoadBalancerSpec{
		Scope: provider.ScopeRegional, MachineIDs: []string{"2", "1"},
		Forwarding: []provider.ForwardingRule{
			{EntryProtocol: "http", EntryPort: 80, TargetProtocol: "http", TargetPort: 8080},
			{EntryProtocol: "https", EntryPort: 443, TargetProtocol: "http", TargetPort: 8080, CertificateID: "c1"},
		},
		HealthCheck:  &provider.HealthCheck{Protocol: "http", Port: 8080, Path: "/healthz"},
		AllowSources: []string{"10.0.0.0/8", "192.0.2.7"},
	}
	// observed is what the provider reports for want, in its own form and order.
	observed := func(edit func(*provider.LoadBalancer)) provider.LoadBalancer {
		got := provider.LoadBalancer{MachineIDs: []string{"1", "2"}, Spec: provider.LoadBalancerSpec{
			Forwarding: []provider.ForwardingRule{
				{EntryProtocol: "HTTPS", EntryPort: 443, TargetProtocol: "http", TargetPort: 8080, CertificateID: "c1"},
				{EntryProtocol: "http", EntryPort: 80, TargetProtocol: "http", TargetPort: 8080},
			},
			HealthCheck: &provider.HealthCheck{Protocol: "http", Port: 8080, Path: "/healthz", IntervalSeconds: 10,
				TimeoutSeconds: 5, HealthyThreshold: 5, UnhealthyThreshold: 3},
			AllowSources:   []string{"ip:192.0.2.7", "cidr:10.0.0.0/8"},
			StickySessions: nil,
		}}
		if edit != nil {
			edit(&got)
		}
		return got
	}
	cases := []struct {
		reason string
		got    provider.LoadBalancer
		want   []string
	}{
		{"the same state in another order and form is no drift", observed(nil), nil},
		{"a droplet removed at the provider", observed(func(l *provider.LoadBalancer) { l.MachineIDs = []string{"1"} }), []string{"machines"}},
		{"a rule changed at the provider", observed(func(l *provider.LoadBalancer) { l.Spec.Forwarding[1].TargetPort = 9 }), []string{"forwarding"}},
		{"a certificate swapped", observed(func(l *provider.LoadBalancer) { l.Spec.Forwarding[0].CertificateID = "c2" }), []string{"forwarding"}},
		{"a health check path changed", observed(func(l *provider.LoadBalancer) { l.Spec.HealthCheck.Path = "/" }), []string{"healthCheck"}},
		{"sticky sessions turned on", observed(func(l *provider.LoadBalancer) {
			l.Spec.StickySessions = &provider.StickySessions{CookieName: "x", TTLSeconds: 1}
		}), []string{"stickySessions"}},
		{"the firewall opened", observed(func(l *provider.LoadBalancer) { l.Spec.AllowSources = nil }), []string{"sourceRanges"}},
		{"redirect switched on", observed(func(l *provider.LoadBalancer) { l.Spec.RedirectHTTPToHTTPS = true }), []string{"redirectHttpToHttps"}},
		{"the provider's defaults stated stand for settings left out", observed(func(l *provider.LoadBalancer) {
			l.Spec.SizeUnit, l.Spec.HTTPIdleTimeoutSeconds, l.Spec.TLSCipherPolicy = 1, 60, "default"
			l.Spec.Network, l.Spec.NetworkStack, l.Spec.Tags = "external", "ipv4", []string{"someone:else"}
		}), nil},
		{"resized at the provider", observed(func(l *provider.LoadBalancer) { l.Spec.SizeUnit = 3 }), []string{"sizeUnit"}},
		{"settings changed at the provider", observed(func(l *provider.LoadBalancer) {
			l.Spec.HTTPIdleTimeoutSeconds, l.Spec.EnableProxyProtocol, l.Spec.EnableBackendKeepalive = 300, true, true
			l.Spec.TLSCipherPolicy, l.Spec.DisableLetsEncryptDNSRecords = "STRONG", true
		}), []string{"httpIdleTimeoutSeconds", "enableProxyProtocol", "enableBackendKeepalive", "tlsCipherPolicy", "disableLetsEncryptDnsRecords"}},
	}
	for _, c := range cases {
		if got := lbDrift(want, c.got); !slices.Equal(got, c.want) {
			t.Errorf("%s: drift %v, want %v", c.reason, got, c.want)
		}
	}
}

// TestLBDriftSettings: settings the tenant gave are compared with what the provider holds, in
// the provider's spelling; network, network stack and tags, which a PUT cannot change, are not.
func TestLBDriftSettings(t *testing.T) {
	t.Parallel()
	want := provider.LoadBalancerSpec{Scope: provider.ScopeRegional, SizeUnit: 2, HTTPIdleTimeoutSeconds: 90,
		TLSCipherPolicy: "strong", Network: "internal", Tags: []string{"team:web"}}
	got := provider.LoadBalancer{Spec: provider.LoadBalancerSpec{SizeUnit: 2, HTTPIdleTimeoutSeconds: 90,
		TLSCipherPolicy: "strong", Network: "external"}}
	if d := lbDrift(want, got); d != nil {
		t.Errorf("drift %v, want none", d)
	}
	got.Spec.SizeUnit, got.Spec.TLSCipherPolicy = 1, "default"
	if d := lbDrift(want, got); !slices.Equal(d, []string{"sizeUnit", "tlsCipherPolicy"}) {
		t.Errorf("drift %v, want sizeUnit and tlsCipherPolicy", d)
	}
	global := provider.LoadBalancerSpec{Scope: provider.ScopeGlobal}
	if d := lbDrift(global, provider.LoadBalancer{}); d != nil {
		t.Errorf("a global load balancer without a size unit drifts: %v", d)
	}
}

// TestOutOfBand tells a change someone else made at the provider from one of ours: only the
// first is drift, and it names the parts that differ from what was last applied.
func TestOutOfBand(t *testing.T) {
	t.Parallel()
	want := provider.LoadBalancerSpec{
		Scope: provider.ScopeRegional, MachineIDs: []string{"1", "2"},
		Forwarding: []provider.ForwardingRule{{EntryProtocol: "http", EntryPort: 80, TargetProtocol: "http", TargetPort: 8080}},
	}
	// converged is the provider's copy as the last converged pass saw it.
	converged := func() *provider.LoadBalancer {
		return &provider.LoadBalancer{ID: "p1", Status: provider.LoadBalancerActive, Address: "192.0.2.1",
			MachineIDs: []string{"1", "2"}, Spec: provider.LoadBalancerSpec{Forwarding: slices.Clone(want.Forwarding)}}
	}
	settled := store.LoadBalancer{SpecVersion: 3, AppliedVersion: 3, ReachedMachineIDs: []string{"1", "2"},
		ObservedDigest: listedDigest(converged())}
	edited := func(edit func(*provider.LoadBalancer)) *provider.LoadBalancer {
		lb := converged()
		edit(lb)
		return lb
	}
	rulesChanged := edited(func(l *provider.LoadBalancer) {
		l.Spec.Forwarding = []provider.ForwardingRule{{EntryProtocol: "tcp", EntryPort: 22, TargetProtocol: "tcp", TargetPort: 22}}
	})
	cases := []struct {
		reason string
		row    store.LoadBalancer
		want   provider.LoadBalancerSpec
		got    *provider.LoadBalancer
		drift  []string
	}{
		{"nothing changed anywhere", settled, want, converged(), nil},
		{"someone else replaced the rules and took a droplet out", settled, want, edited(func(l *provider.LoadBalancer) {
			l.Spec.Forwarding, l.MachineIDs = rulesChanged.Spec.Forwarding, []string{"1"}
		}), []string{"machines", "forwarding"}},
		{"someone else turned the redirect on", settled, want,
			edited(func(l *provider.LoadBalancer) { l.Spec.RedirectHTTPToHTTPS = true }), []string{"redirectHttpToHttps"}},
		{"our update is not applied yet (spec_version moved): the difference is ours",
			func() store.LoadBalancer { r := settled; r.SpecVersion++; return r }(), want, rulesChanged, nil},
		{"our pool gained a machine: we want more than the provider holds, which did not change", settled,
			func() provider.LoadBalancerSpec { w := want; w.MachineIDs = []string{"1", "2", "3"}; return w }(), converged(), nil},
		{"our pool gained a machine while the provider's copy changed in nothing we set", settled,
			func() provider.LoadBalancerSpec { w := want; w.MachineIDs = []string{"1", "2", "3"}; return w }(),
			edited(func(l *provider.LoadBalancer) { l.AddressV6 = "2001:db8::1" }), nil},
		{"no converged pass recorded what the provider showed", func() store.LoadBalancer {
			r := settled
			r.ObservedDigest = nil
			return r
		}(), want, rulesChanged, nil},
	}
	for _, c := range cases {
		if got := outOfBand(c.row, c.want, c.got); !slices.Equal(got, c.drift) {
			t.Errorf("%s: drift %v, want %v", c.reason, got, c.drift)
		}
	}
}
