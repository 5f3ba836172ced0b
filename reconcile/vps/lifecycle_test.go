package vps_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"better-compute.dev/compute/contract"
	v1 "better-compute.dev/compute/gen/go/bettercompute/compute/v1"
	"better-compute.dev/compute/lifecycle"
	"better-compute.dev/compute/reconcile/managed"
	"better-compute.dev/compute/store"
)

// A load balancer goes from created to ready with the droplets of its pool's instances and the
// provider's address, bills from ready, and on delete leaves the provider, closes its usage,
// refunds its quota and publishes deleted.
func TestLoadBalancerLifecycle(t *testing.T) {
	e := newEnv(t, "life", 10)
	a, b := e.instance(t, "a", ""), e.instance(t, "b", "")
	for _, in := range []store.Instance{a, b} {
		if got := e.sim.CountLoadBalancersNamed(e.token, managed.ProviderName(in.ID)); got != 0 {
			t.Fatalf("instance names must not be load balancer names")
		}
	}
	snap := e.snapshot(t)
	if len(snap.Droplets) != 2 || snap.Droplets[0].SizeSlug != "s-1vcpu-1gb" {
		t.Fatalf("droplets at the provider: %+v", snap.Droplets)
	}
	ttl := int32(300)
	req := e.lbRequest("web", pool())
	req.HealthCheck = &v1.HealthCheck{Protocol: "http", Port: 8080, Path: "/healthz", IntervalSeconds: &ttl}
	req.StickySessions = &v1.StickySessions{CookieName: "bc", TtlSeconds: 60}
	req.SourceRanges = &v1.SourceRanges{Allow: []string{"10.0.0.0/8", "192.0.2.7"}}
	lb := e.createLB(t, req)

	row := e.waitState(t, lb.GetId(), "ready")
	at, found := e.providerLB(t, row.ProviderID)
	if !found {
		t.Fatalf("load balancer %s is not at the provider", row.ProviderID)
	}
	checks := []struct {
		reason    string
		got, want any
	}{
		{"the provider name is deterministic", at.Name, managed.ProviderName(lb.GetId())},
		{"the droplets are the pool's instances' machines", droplets(at), machines(a, b)},
		{"the row records the machines reached", row.ReachedMachineIDs, machines(a, b)},
		{"the row records the instances reached", row.ReachedInstanceIDs, sorted(a.ID, b.ID)},
		{"the address is the provider's", row.Address, at.IP},
		{"the v6 address is the provider's", row.AddressV6, at.IPv6},
		{"the health check path is applied", at.HealthCheck.Path, "/healthz"},
		{"the health check interval is applied", at.HealthCheck.CheckIntervalSeconds, 300},
		{"sticky sessions are cookies", at.StickySessions.Type, "cookies"},
		{"source ranges are the firewall", at.Firewall.Allow, []string{"cidr:10.0.0.0/8", "ip:192.0.2.7"}},
		{"the events are created then ready", e.eventTypes(t, lb.GetId()), []string{lifecycle.EventLBCreated, lifecycle.EventLBReady}},
		{"usage opens at ready", len(e.usage(t, lb.GetId())), 1},
		{"no error shows", row.LastError, ""},
		{"the quota is booked", e.quotaUsed(t, lifecycle.QuotaLoadBalancers), int64(1)},
	}
	for _, c := range checks {
		if diff := cmp.Diff(c.want, c.got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", c.reason, diff)
		}
	}
	if u := e.usage(t, lb.GetId()); len(u) == 1 && (u[0].EndedAt != nil || u[0].StartedAt.Before(*row.ReadyAt)) {
		t.Errorf("usage must open at ready and stay open: %+v, ready at %v", u[0], row.ReadyAt)
	}

	e.deleteLB(t, lb.GetId())
	row = e.waitState(t, lb.GetId(), "deleted")
	if _, found := e.providerLB(t, row.ProviderID); found {
		t.Errorf("load balancer %s is still at the provider", row.ProviderID)
	}
	if row.DeletedAt == nil {
		t.Errorf("deleted_at is not set")
	}
	if u := e.usage(t, lb.GetId()); len(u) != 1 || u[0].EndedAt == nil {
		t.Errorf("usage must close at delete: %+v", u)
	}
	if got := e.quotaUsed(t, lifecycle.QuotaLoadBalancers); got != 0 {
		t.Errorf("quota used after delete = %d, want 0 (refunded)", got)
	}
	want := []string{lifecycle.EventLBCreated, lifecycle.EventLBReady, lifecycle.EventLBDeleted}
	if diff := cmp.Diff(want, e.eventTypes(t, lb.GetId())); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

// A load balancer on a subnet lives in the subnet's VPC and reaches the instances on it; a
// global one targets the regional ones by their provider ids.
func TestSubnetAndGlobalPlacement(t *testing.T) {
	e := newEnv(t, "place", 10)
	svc := e.s.App
	nw, err := svc.Resources.CreateNetwork(e.tn.Ctx, &v1.CreateNetworkRequest{TenantId: e.tn.ID, AccountId: e.tn.AccountID, Name: "net"})
	if err != nil {
		t.Fatal(err)
	}
	sn, err := svc.Resources.CreateSubnet(e.tn.Ctx, &v1.CreateSubnetRequest{TenantId: e.tn.ID, NetworkId: nw.GetId(), Name: "sn", Region: "nyc3", IpRange: "10.40.0.0/24"})
	if err != nil {
		t.Fatal(err)
	}
	// The instance and the load balancer are recorded before the VPC exists: both wait for it.
	req := e.lbRequest("inner", pool())
	req.SubnetId = sn.GetId()
	inner := e.createLB(t, req)
	in := e.instance(t, "vm", sn.GetId())
	outer := e.createLB(t, e.lbRequest("outer", pool()))
	glb := e.createLB(t, &v1.CreateLoadBalancerRequest{
		TenantId: e.tn.ID, PoolId: e.tn.PoolID, Name: "edge", Scope: "global", IdempotencyKey: "k-edge",
		Targets:    &v1.LoadBalancerTargets{LoadBalancerIds: []string{inner.GetId(), outer.GetId()}},
		Forwarding: []*v1.ForwardingRule{{EntryProtocol: "http", EntryPort: 80, TargetProtocol: "http", TargetPort: 80}},
		Domains:    []*v1.Domain{{Name: "edge.example.com"}},
	})

	subnet, err := store.GetSubnet(e.ctx, e.s.App.DB.Q(), sn.GetId())
	if err != nil || subnet.State != "ready" || subnet.ProviderID == "" {
		t.Fatalf("subnet: %+v %v", subnet, err)
	}
	innerRow := e.waitState(t, inner.GetId(), "ready")
	outerRow := e.waitState(t, outer.GetId(), "ready")
	glbRow := e.waitState(t, glb.GetId(), "ready")
	innerAt, _ := e.providerLB(t, innerRow.ProviderID)
	outerAt, _ := e.providerLB(t, outerRow.ProviderID)
	glbAt, _ := e.providerLB(t, glbRow.ProviderID)
	var vm string
	for _, d := range e.snapshot(t).Droplets {
		if d.Name == managed.ProviderName(in.ID) {
			vm = d.VPCUUID
		}
	}
	checks := []struct {
		reason    string
		got, want any
	}{
		{"the instance's droplet is in the subnet's VPC", vm, subnet.ProviderID},
		{"the subnet's load balancer is in its VPC", innerAt.VPCUUID, subnet.ProviderID},
		{"the subnet's load balancer reaches its instance", droplets(innerAt), machines(in)},
		{"a load balancer on the default network reaches no subnet instance", droplets(outerAt), []string{}},
		{"the global one targets the regional ones' provider ids", sorted(glbAt.TargetLoadBalancerIDs...), sorted(innerRow.ProviderID, outerRow.ProviderID)},
		{"the global one serves its domain", len(glbAt.Domains), 1},
	}
	for _, c := range checks {
		if diff := cmp.Diff(c.want, c.got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", c.reason, diff)
		}
	}
}

// The provider is asked for a load balancer only once every certificate it names is ready.
func TestCertificatePendingHoldsProviderCall(t *testing.T) {
	e := newEnv(t, "certs", 10)
	in := e.instance(t, "a", "")
	cert, lb := e.tlsLB(t)

	// While the certificate is pending at the provider the load balancer's passes run and
	// ask nothing.
	eventually(t, "a pass on the load balancer", func() (bool, string) {
		w, err := store.GetWorkItem(e.ctx, e.s.App.DB, contract.VPSKind, lb.GetId())
		return err == nil && w.Epoch >= 2, fmt.Sprintf("%+v %v", w, err)
	})
	certRow, err := store.GetCertificate(e.ctx, e.s.App.DB.Q(), cert.GetId())
	if err != nil {
		t.Fatal(err)
	}
	if certRow.State == "pending" {
		if n := e.sim.CountLoadBalancersNamed(e.token, managed.ProviderName(lb.GetId())); n != 0 {
			t.Fatalf("the provider was asked while the certificate is pending (%d load balancers)", n)
		}
		if row := e.lbRow(t, lb.GetId()); row.State != "pending" || row.ProviderID != "" {
			t.Fatalf("the load balancer must stay pending: %+v", row)
		}
	}
	row := e.waitState(t, lb.GetId(), "ready")
	certRow, _ = store.GetCertificate(e.ctx, e.s.App.DB.Q(), cert.GetId())
	at, _ := e.providerLB(t, row.ProviderID)
	var certAt string
	for _, f := range at.ForwardingRules {
		if f.EntryPort == 443 {
			certAt = f.CertificateID
		}
	}
	if certRow.State != "ready" || certAt != certRow.ProviderID {
		t.Errorf("https rule certificate %q, want the ready certificate's %q (%s)", certAt, certRow.ProviderID, certRow.State)
	}
	if diff := cmp.Diff(machines(in), droplets(at)); diff != "" {
		t.Errorf("droplets (-want +got):\n%s", diff)
	}
	if slices.Contains(e.eventTypes(t, lb.GetId()), lifecycle.EventLBError) {
		t.Errorf("no error may be published: %v", e.eventTypes(t, lb.GetId()))
	}
}

// sorted returns the strings sorted (empty, never nil).
func sorted(s ...string) []string {
	out := append([]string{}, s...)
	slices.Sort(out)
	return out
}
