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
	}
	for _, c := range cases {
		if got := lbDrift(want, c.got); !slices.Equal(got, c.want) {
			t.Errorf("%s: drift %v, want %v", c.reason, got, c.want)
		}
	}
}
