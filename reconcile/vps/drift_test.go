package vps

import (
	"slices"
	"testing"

	"better-compute.dev/compute/provider"
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
