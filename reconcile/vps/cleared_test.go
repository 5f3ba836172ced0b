package vps_test

import (
	"fmt"
	"testing"

	"google.golang.org/protobuf/types/known/fieldmaskpb"

	v1 "better-compute.dev/compute/gen/go/bettercompute/compute/v1"
)

// TestClearedSettingsReachProvider: an update whose mask removes the health check and sticky
// sessions and empties the domains is sent to the provider as such (the PUT carries the whole
// desired state), not left as the provider last had it.
func TestClearedSettingsReachProvider(t *testing.T) {
	e := newEnv(t, "clear", 10)
	svc := e.s.App
	req := e.lbRequest("web", pool())
	req.HealthCheck = &v1.HealthCheck{Protocol: "tcp", Port: 8080}
	req.StickySessions = &v1.StickySessions{CookieName: "lb", TtlSeconds: 60}
	reg := e.createLB(t, req)
	glb := e.createLB(t, &v1.CreateLoadBalancerRequest{
		TenantId: e.tn.ID, PoolId: e.tn.PoolID, Name: "edge", Scope: "global", IdempotencyKey: "k-edge",
		Targets:    &v1.LoadBalancerTargets{LoadBalancerIds: []string{reg.GetId()}},
		Forwarding: []*v1.ForwardingRule{{EntryProtocol: "http", EntryPort: 80, TargetProtocol: "http", TargetPort: 80}},
		Domains:    []*v1.Domain{{Name: "edge.example.com"}},
	})
	regRow := e.waitState(t, reg.GetId(), "ready")
	glbRow := e.waitState(t, glb.GetId(), "ready")
	regAt, _ := e.providerLB(t, regRow.ProviderID)
	glbAt, _ := e.providerLB(t, glbRow.ProviderID)
	if regAt.HealthCheck.Protocol != "tcp" || regAt.StickySessions.Type != "cookies" || len(glbAt.Domains) != 1 {
		t.Fatalf("before: health %+v sticky %+v domains %v", regAt.HealthCheck, regAt.StickySessions, glbAt.Domains)
	}

	for id, paths := range map[string][]string{reg.GetId(): {"health_check", "sticky_sessions"}, glb.GetId(): {"domains"}} {
		if _, err := svc.LoadBalancers.UpdateLoadBalancer(e.tn.Ctx, &v1.UpdateLoadBalancerRequest{TenantId: e.tn.ID, LoadBalancerId: id,
			UpdateMask: &fieldmaskpb.FieldMask{Paths: paths}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{reg.GetId(), glb.GetId()} {
		eventually(t, "update of "+id+" applied", func() (bool, string) {
			row := e.lbRow(t, id)
			return row.State == "ready" && row.AppliedVersion >= row.SpecVersion, fmt.Sprintf("%s %d/%d", row.State, row.AppliedVersion, row.SpecVersion)
		})
	}
	regAt, _ = e.providerLB(t, regRow.ProviderID)
	glbAt, _ = e.providerLB(t, glbRow.ProviderID)
	if regAt.HealthCheck == nil || regAt.HealthCheck.Protocol == "tcp" || regAt.HealthCheck.Port == 8080 {
		t.Errorf("the removed health check is still at the provider: %+v", regAt.HealthCheck)
	}
	if regAt.StickySessions == nil || regAt.StickySessions.Type != "none" {
		t.Errorf("the removed sticky sessions are still at the provider: %+v", regAt.StickySessions)
	}
	if len(glbAt.Domains) != 0 {
		t.Errorf("the emptied domains are still at the provider: %v", glbAt.Domains)
	}
}
