package loadbalancers_test

import (
	"context"
	"slices"
	"testing"

	"google.golang.org/protobuf/proto"

	"better-compute.dev/compute/apierr"
	"better-compute.dev/compute/app/apptest"
	v1 "better-compute.dev/compute/gen/go/bettercompute/compute/v1"
	"better-compute.dev/compute/gen/go/bettercompute/compute/v1/errcode"
	"better-compute.dev/compute/store"
)

func boolp(b bool) *bool { return &b }

// world is two tenants, each with a pool, a network with a subnet in nyc3 and one in sfo3,
// instances with machines, and a certificate.
type world struct {
	s                 *apptest.Stack
	a, b              apptest.Tenant
	aSubnet, aSubnet2 string
	bSubnet           string
	aCert, bCert      string
}

func newWorld(t *testing.T) *world {
	t.Helper()
	s := apptest.Start(t)
	w := &world{s: s, a: s.NewTenant(t, "acme", "editor"), b: s.NewTenant(t, "globex", "editor")}
	for _, tn := range []apptest.Tenant{w.a, w.b} {
		for _, res := range []string{"loadBalancers", "instances"} {
			if _, err := s.App.Pools.SetQuota(s.AdminCtx, &v1.SetQuotaRequest{TenantId: tn.ID, PoolId: tn.PoolID, Resource: res, Limit: 200}); err != nil {
				t.Fatal(err)
			}
		}
	}
	w.aSubnet = s.Subnet(t, w.a, "nyc3", "10.1.0.0/24")
	w.aSubnet2 = s.Subnet(t, w.a, "nyc3", "10.2.0.0/24")
	w.bSubnet = s.Subnet(t, w.b, "nyc3", "10.3.0.0/24")
	w.aCert = s.Certificate(t, w.a, w.a.AccountID)
	w.bCert = s.Certificate(t, w.b, w.b.AccountID)
	return w
}

// TestSeedSentences asserts each sentence of the seed's loadBalancers page; the case names quote it.
func TestSeedSentences(t *testing.T) {
	w := newWorld(t)
	s, svc, a, b := w.s, w.s.App.Services, w.a, w.b
	ctx := context.Background()
	inst := func(tn apptest.Tenant, region, subnet string) string {
		return s.MachineInstance(t, tn, region, subnet).GetId()
	}

	cases := []struct {
		sentence string
		run      func(t *testing.T)
	}{
		{"create returns pending", func(t *testing.T) {
			lb, err := svc.LoadBalancers.CreateLoadBalancer(a.Ctx, apptest.LoadBalancerRequest(a, apptest.PoolTargets()))
			if err != nil || lb.GetState() != "pending" {
				t.Fatalf("%v %v", lb, err)
			}
		}},
		{"Publishes providerLoadBalancer.created", func(t *testing.T) {
			lb, err := svc.LoadBalancers.CreateLoadBalancer(a.Ctx, apptest.LoadBalancerRequest(a, apptest.PoolTargets()))
			if err != nil {
				t.Fatal(err)
			}
			evs, _, err := svc.Events.ListEvents(a.Ctx, &v1.ListEventsRequest{TenantId: a.ID, ResourceId: lb.GetId()})
			if err != nil || len(evs) != 1 || evs[0].GetType() != "providerLoadBalancer.created" {
				t.Fatalf("events %v %v", evs, err)
			}
		}},
		{"A load balancer books one loadBalancers quota on the pool", func(t *testing.T) {
			before := used(t, s, a)
			if _, err := svc.LoadBalancers.CreateLoadBalancer(a.Ctx, apptest.LoadBalancerRequest(a, apptest.PoolTargets())); err != nil {
				t.Fatal(err)
			}
			if got := used(t, s, a); got != before+1 {
				t.Fatalf("used %d -> %d", before, got)
			}
		}},
		{"no quota row grants none: QUOTA_EXCEEDED", func(t *testing.T) {
			pool := s.NewPool(t, a.ID, a.AccountID, "noquota", 0)
			if _, err := s.App.DB.Q().Exec(ctx, "DELETE FROM quotas WHERE pool_id = $1", pool); err != nil {
				t.Fatal(err)
			}
			r := apptest.LoadBalancerRequest(a, apptest.PoolTargets())
			r.PoolId = pool
			_, err := svc.LoadBalancers.CreateLoadBalancer(a.Ctx, r)
			apptest.WantCode(t, err, errcode.QuotaExceeded, "")
		}},
		{"no room is QUOTA_EXCEEDED", func(t *testing.T) {
			pool := s.NewPool(t, a.ID, a.AccountID, "tiny", 1)
			r := apptest.LoadBalancerRequest(a, apptest.PoolTargets())
			r.PoolId = pool
			if _, err := svc.LoadBalancers.CreateLoadBalancer(a.Ctx, r); err != nil {
				t.Fatal(err)
			}
			r.IdempotencyKey = apptest.NewKey()
			_, err := svc.LoadBalancers.CreateLoadBalancer(a.Ctx, r)
			apptest.WantCode(t, err, errcode.QuotaExceeded, "")
		}},
		{"Reading takes read, everything else manage: a viewer reads but cannot create", func(t *testing.T) {
			_, _, viewer := s.NewPrincipal(t, a.ID, "viewer")
			lb, err := svc.LoadBalancers.CreateLoadBalancer(a.Ctx, apptest.LoadBalancerRequest(a, apptest.PoolTargets()))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := svc.LoadBalancers.GetLoadBalancer(viewer, &v1.GetLoadBalancerRequest{TenantId: a.ID, LoadBalancerId: lb.GetId()}); err != nil {
				t.Fatal(err)
			}
			_, err = svc.LoadBalancers.CreateLoadBalancer(viewer, apptest.LoadBalancerRequest(a, apptest.PoolTargets()))
			apptest.WantCode(t, err, errcode.AccessDenied, "")
			_, err = svc.LoadBalancers.DeleteLoadBalancer(viewer, &v1.DeleteLoadBalancerRequest{TenantId: a.ID, LoadBalancerId: lb.GetId()})
			apptest.WantCode(t, err, errcode.AccessDenied, "")
			_, err = svc.LoadBalancers.UpdateLoadBalancer(viewer, &v1.UpdateLoadBalancerRequest{TenantId: a.ID, LoadBalancerId: lb.GetId(), RedirectHttpToHttps: boolp(true)})
			apptest.WantCode(t, err, errcode.AccessDenied, "")
		}},
		{"a regional one targets named instances of the tenant and lives on the subnet they share", func(t *testing.T) {
			i1, i2 := inst(a, "nyc3", w.aSubnet), inst(a, "nyc3", w.aSubnet)
			lb, err := svc.LoadBalancers.CreateLoadBalancer(a.Ctx, apptest.LoadBalancerRequest(a, &v1.LoadBalancerTargets{InstanceIds: []string{i1, i2}}))
			if err != nil || lb.GetSubnetId() != w.aSubnet {
				t.Fatalf("%v %v", lb, err)
			}
		}},
		{"named instances on two subnets is INVALID_INPUT", func(t *testing.T) {
			i1, i2 := inst(a, "nyc3", w.aSubnet), inst(a, "nyc3", w.aSubnet2)
			_, err := svc.LoadBalancers.CreateLoadBalancer(a.Ctx, apptest.LoadBalancerRequest(a, &v1.LoadBalancerTargets{InstanceIds: []string{i1, i2}}))
			apptest.WantCode(t, err, errcode.InvalidInput, "targets.instanceIds")
		}},
		{"named instances not on subnetId is INVALID_INPUT", func(t *testing.T) {
			r := apptest.LoadBalancerRequest(a, &v1.LoadBalancerTargets{InstanceIds: []string{inst(a, "nyc3", w.aSubnet2)}})
			r.SubnetId = w.aSubnet
			_, err := svc.LoadBalancers.CreateLoadBalancer(a.Ctx, r)
			apptest.WantCode(t, err, errcode.InvalidInput, "targets.instanceIds[0]")
		}},
		{"Another tenant's instance is ACCESS_DENIED", func(t *testing.T) {
			_, err := svc.LoadBalancers.CreateLoadBalancer(a.Ctx, apptest.LoadBalancerRequest(a, &v1.LoadBalancerTargets{InstanceIds: []string{inst(b, "nyc3", "")}}))
			apptest.WantCode(t, err, errcode.AccessDenied, "targets.instanceIds[0]")
		}},
		{"another region is INVALID_INPUT", func(t *testing.T) {
			_, err := svc.LoadBalancers.CreateLoadBalancer(a.Ctx, apptest.LoadBalancerRequest(a, &v1.LoadBalancerTargets{InstanceIds: []string{inst(a, "sfo3", "")}}))
			apptest.WantCode(t, err, errcode.InvalidInput, "targets.instanceIds[0]")
		}},
		{"another account is INVALID_INPUT", func(t *testing.T) {
			acct, err := svc.Tenancy.CreateProviderAccount(s.AdminCtx, &v1.CreateProviderAccountRequest{TenantId: a.ID, Kind: "digitalocean", Name: "second", Token: "t2"})
			if err != nil {
				t.Fatal(err)
			}
			other := a
			other.PoolID = s.NewPool(t, a.ID, acct.GetId(), "second", 5)
			i := s.MachineInstance(t, other, "nyc3", "").GetId()
			_, err = svc.LoadBalancers.CreateLoadBalancer(a.Ctx, apptest.LoadBalancerRequest(a, &v1.LoadBalancerTargets{InstanceIds: []string{i}}))
			apptest.WantCode(t, err, errcode.InvalidInput, "targets.instanceIds[0]")
			r := apptest.LoadBalancerRequest(a, apptest.PoolTargets())
			r.Forwarding = []*v1.ForwardingRule{{EntryProtocol: "https", EntryPort: 443, TargetProtocol: "http", TargetPort: 80, CertificateId: s.Certificate(t, a, acct.GetId())}}
			_, err = svc.LoadBalancers.CreateLoadBalancer(a.Ctx, r)
			apptest.WantCode(t, err, errcode.InvalidInput, "forwarding[0].certificateId")
		}},
		{"another tenant's subnet is NOT_FOUND", func(t *testing.T) {
			r := apptest.LoadBalancerRequest(a, apptest.PoolTargets())
			r.SubnetId = w.bSubnet
			_, err := svc.LoadBalancers.CreateLoadBalancer(a.Ctx, r)
			apptest.WantCode(t, err, errcode.NotFound, "subnetId")
		}},
		{"another tenant's certificate is NOT_FOUND", func(t *testing.T) {
			r := apptest.LoadBalancerRequest(a, apptest.PoolTargets())
			r.Forwarding = []*v1.ForwardingRule{{EntryProtocol: "https", EntryPort: 443, TargetProtocol: "http", TargetPort: 80, CertificateId: w.bCert}}
			_, err := svc.LoadBalancers.CreateLoadBalancer(a.Ctx, r)
			apptest.WantCode(t, err, errcode.NotFound, "forwarding[0].certificateId")
		}},
		{"an https entry names a certificate of the tenant on the same account", func(t *testing.T) {
			r := apptest.LoadBalancerRequest(a, apptest.PoolTargets())
			r.Forwarding = []*v1.ForwardingRule{{EntryProtocol: "https", EntryPort: 443, TargetProtocol: "http", TargetPort: 80, CertificateId: w.aCert}}
			if _, err := svc.LoadBalancers.CreateLoadBalancer(a.Ctx, r); err != nil {
				t.Fatal(err)
			}
		}},
		{"a global one targets the tenant's regional load balancers; another tenant's is NOT_FOUND", func(t *testing.T) {
			mine, err := svc.LoadBalancers.CreateLoadBalancer(a.Ctx, apptest.LoadBalancerRequest(a, apptest.PoolTargets()))
			if err != nil {
				t.Fatal(err)
			}
			theirs, err := svc.LoadBalancers.CreateLoadBalancer(b.Ctx, apptest.LoadBalancerRequest(b, apptest.PoolTargets()))
			if err != nil {
				t.Fatal(err)
			}
			g := &v1.CreateLoadBalancerRequest{TenantId: a.ID, PoolId: a.PoolID, Name: "edge", Scope: "global", Forwarding: apptest.HTTPRule(),
				Targets: &v1.LoadBalancerTargets{LoadBalancerIds: []string{mine.GetId()}}, Domains: []*v1.Domain{{Name: "example.com"}}, IdempotencyKey: apptest.NewKey()}
			if lb, err := svc.LoadBalancers.CreateLoadBalancer(a.Ctx, g); err != nil || lb.GetScope() != "global" {
				t.Fatalf("%v %v", lb, err)
			}
			g.Targets.LoadBalancerIds, g.IdempotencyKey = []string{theirs.GetId()}, apptest.NewKey()
			_, err = svc.LoadBalancers.CreateLoadBalancer(a.Ctx, g)
			apptest.WantCode(t, err, errcode.NotFound, "targets.loadBalancerIds[0]")
		}},
		{"A regional load balancer a global one of the tenant targets is INVALID_STATE (reason inUse)", func(t *testing.T) {
			mine, _ := svc.LoadBalancers.CreateLoadBalancer(a.Ctx, apptest.LoadBalancerRequest(a, apptest.PoolTargets()))
			g := &v1.CreateLoadBalancerRequest{TenantId: a.ID, PoolId: a.PoolID, Name: "edge-inuse", Scope: "global", Forwarding: apptest.HTTPRule(),
				Targets: &v1.LoadBalancerTargets{LoadBalancerIds: []string{mine.GetId()}}, IdempotencyKey: apptest.NewKey()}
			glb, err := svc.LoadBalancers.CreateLoadBalancer(a.Ctx, g)
			if err != nil {
				t.Fatal(err)
			}
			_, err = svc.LoadBalancers.DeleteLoadBalancer(a.Ctx, &v1.DeleteLoadBalancerRequest{TenantId: a.ID, LoadBalancerId: mine.GetId()})
			if pe := apierr.From(err); pe.Code != errcode.InvalidState || pe.StateReason != "inUse" {
				t.Fatalf("got %v", err)
			}
			// Once the global one is being deleted, the regional one may go.
			if _, err := svc.LoadBalancers.DeleteLoadBalancer(a.Ctx, &v1.DeleteLoadBalancerRequest{TenantId: a.ID, LoadBalancerId: glb.GetId()}); err != nil {
				t.Fatal(err)
			}
			if lb, err := svc.LoadBalancers.DeleteLoadBalancer(a.Ctx, &v1.DeleteLoadBalancerRequest{TenantId: a.ID, LoadBalancerId: mine.GetId()}); err != nil || lb.GetState() != "deleting" {
				t.Fatalf("%v %v", lb, err)
			}
		}},
		{"get returns settings, targets, address and addressV6 once assigned, and state", func(t *testing.T) {
			lb, _ := svc.LoadBalancers.CreateLoadBalancer(a.Ctx, apptest.LoadBalancerRequest(a, apptest.PoolTargets()))
			if _, err := store.RecordLoadBalancerObservation(ctx, s.App.DB.Q(), store.LoadBalancerObservation{
				ID: lb.GetId(), State: "ready", ProviderID: "p1", Address: "192.0.2.10", AddressV6: "2001:db8::10", MarkReady: true,
			}); err != nil {
				t.Fatal(err)
			}
			got, err := svc.LoadBalancers.GetLoadBalancer(a.Ctx, &v1.GetLoadBalancerRequest{TenantId: a.ID, LoadBalancerId: lb.GetId()})
			if err != nil || got.GetAddress() != "192.0.2.10" || got.GetAddressV6() != "2001:db8::10" || got.GetState() != "ready" ||
				!got.GetTargets().GetPool() || len(got.GetForwarding()) != 1 || got.GetReadyTime() == nil {
				t.Fatalf("%v %v", got, err)
			}
		}},
		{"update replaces each part given, returns it updating, publishes updated with what changed", func(t *testing.T) {
			lb, _ := svc.LoadBalancers.CreateLoadBalancer(a.Ctx, apptest.LoadBalancerRequest(a, apptest.PoolTargets()))
			_, _ = store.RecordLoadBalancerObservation(ctx, s.App.DB.Q(), store.LoadBalancerObservation{ID: lb.GetId(), State: "ready", ProviderID: "p1", MarkReady: true})
			up, err := svc.LoadBalancers.UpdateLoadBalancer(a.Ctx, &v1.UpdateLoadBalancerRequest{TenantId: a.ID, LoadBalancerId: lb.GetId(),
				HealthCheck: &v1.HealthCheck{Protocol: "tcp", Port: 8080}, StickySessions: &v1.StickySessions{CookieName: "lb", TtlSeconds: 60}})
			if err != nil || up.GetState() != "updating" || up.GetHealthCheck().GetProtocol() != "tcp" || !up.GetTargets().GetPool() || len(up.GetForwarding()) != 1 {
				t.Fatalf("%v %v", up, err)
			}
			evs, _, _ := svc.Events.ListEvents(a.Ctx, &v1.ListEventsRequest{TenantId: a.ID, ResourceId: lb.GetId()})
			last := evs[len(evs)-1]
			changed := last.GetData().GetFields()["changed"].GetListValue().AsSlice()
			if last.GetType() != "providerLoadBalancer.updated" || !slices.Equal(changed, []any{"healthCheck", "stickySessions"}) {
				t.Fatalf("event %v", last)
			}
		}},
		{"update: named instances must be on its subnet, or without one on no tenant network", func(t *testing.T) {
			lb, _ := svc.LoadBalancers.CreateLoadBalancer(a.Ctx, apptest.LoadBalancerRequest(a, apptest.PoolTargets()))
			_, err := svc.LoadBalancers.UpdateLoadBalancer(a.Ctx, &v1.UpdateLoadBalancerRequest{TenantId: a.ID, LoadBalancerId: lb.GetId(),
				Targets: &v1.LoadBalancerTargets{InstanceIds: []string{inst(a, "nyc3", w.aSubnet)}}})
			apptest.WantCode(t, err, errcode.InvalidInput, "targets.instanceIds[0]")
			if _, err := svc.LoadBalancers.UpdateLoadBalancer(a.Ctx, &v1.UpdateLoadBalancerRequest{TenantId: a.ID, LoadBalancerId: lb.GetId(),
				Targets: &v1.LoadBalancerTargets{InstanceIds: []string{inst(a, "nyc3", "")}}}); err != nil {
				t.Fatal(err)
			}
		}},
		{"Named instances are also decided as compute:instances:update on each, with the caller's own credential", func(t *testing.T) {
			lb, err := svc.LoadBalancers.CreateLoadBalancer(a.Ctx, apptest.LoadBalancerRequest(a, apptest.PoolTargets()))
			if err != nil {
				t.Fatal(err)
			}
			vm := inst(a, "nyc3", "")
			// A principal that manages this one load balancer (a direct grant) but may not update the instance.
			pid, _, p := s.NewPrincipal(t, a.ID, "")
			grant := func(typ, id string) {
				if err := svc.Tenancy.GrantRole(s.AdminCtx, &v1.GrantRoleRequest{TenantId: a.ID, PrincipalId: pid, Role: "manager", ObjectType: typ, ObjectId: id}); err != nil {
					t.Fatal(err)
				}
			}
			grant("compute-provider-load-balancer", lb.GetId())
			up := &v1.UpdateLoadBalancerRequest{TenantId: a.ID, LoadBalancerId: lb.GetId(), Targets: &v1.LoadBalancerTargets{InstanceIds: []string{vm}}}
			_, err = svc.LoadBalancers.UpdateLoadBalancer(p, up)
			apptest.WantCode(t, err, errcode.AccessDenied, "targets.instanceIds[0]")
			grant("compute-instance", vm)
			if got, err := svc.LoadBalancers.UpdateLoadBalancer(p, up); err != nil || got.GetTargets().GetInstanceIds()[0] != vm {
				t.Fatalf("with instances:update: %v %v", got, err)
			}
		}},
		{"delete returns it deleting", func(t *testing.T) {
			lb, _ := svc.LoadBalancers.CreateLoadBalancer(a.Ctx, apptest.LoadBalancerRequest(a, apptest.PoolTargets()))
			got, err := svc.LoadBalancers.DeleteLoadBalancer(a.Ctx, &v1.DeleteLoadBalancerRequest{TenantId: a.ID, LoadBalancerId: lb.GetId()})
			if err != nil || got.GetState() != "deleting" {
				t.Fatalf("%v %v", got, err)
			}
		}},
		{"another tenant's load balancer is NOT_FOUND on get, update and delete", func(t *testing.T) {
			theirs, _ := svc.LoadBalancers.CreateLoadBalancer(b.Ctx, apptest.LoadBalancerRequest(b, apptest.PoolTargets()))
			for _, tenant := range []string{a.ID, b.ID} {
				_, err := svc.LoadBalancers.GetLoadBalancer(a.Ctx, &v1.GetLoadBalancerRequest{TenantId: tenant, LoadBalancerId: theirs.GetId()})
				apptest.WantCode(t, err, errcode.NotFound, "")
				_, err = svc.LoadBalancers.UpdateLoadBalancer(a.Ctx, &v1.UpdateLoadBalancerRequest{TenantId: tenant, LoadBalancerId: theirs.GetId(), RedirectHttpToHttps: boolp(true)})
				apptest.WantCode(t, err, errcode.NotFound, "")
				_, err = svc.LoadBalancers.DeleteLoadBalancer(a.Ctx, &v1.DeleteLoadBalancerRequest{TenantId: tenant, LoadBalancerId: theirs.GetId()})
				apptest.WantCode(t, err, errcode.NotFound, "")
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.sentence, tc.run)
	}
}

func used(t *testing.T, s *apptest.Stack, tn apptest.Tenant) int64 {
	t.Helper()
	qs, err := store.ListQuotas(context.Background(), s.App.DB.Q(), tn.ID, tn.PoolID)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range qs {
		if q.Resource == "loadBalancers" {
			return q.Used
		}
	}
	return -1
}

// TestCreateAnswersAsGet: a create answers with the load balancer a get of it returns, for
// requests that set each of the settings (the create builds its answer from the message it
// stored, a get parses the stored JSON back). Only what the reconciler may have changed since
// (state, addresses, times it sets) is left out of the comparison.
func TestCreateAnswersAsGet(t *testing.T) {
	w := newWorld(t)
	tn := w.a
	i32 := func(v int32) *int32 { return &v }
	cases := map[string]func(r *v1.CreateLoadBalancerRequest){
		"pool targets, one rule": func(*v1.CreateLoadBalancerRequest) {},
		"health check and sticky sessions": func(r *v1.CreateLoadBalancerRequest) {
			r.HealthCheck = &v1.HealthCheck{Protocol: "http", Port: 8080, Path: "/healthz", IntervalSeconds: i32(10), TimeoutSeconds: i32(5)}
			r.StickySessions = &v1.StickySessions{CookieName: "bc", TtlSeconds: 300}
		},
		"source ranges, redirect, description and subnet": func(r *v1.CreateLoadBalancerRequest) {
			r.SourceRanges = &v1.SourceRanges{Allow: []string{"10.0.0.0/8", "192.168.1.0/24"}, Deny: []string{"10.9.0.0/16"}}
			r.RedirectHttpToHttps = true
			r.Description = "front door"
			r.SubnetId = w.aSubnet
		},
	}
	for name, edit := range cases {
		t.Run(name, func(t *testing.T) {
			r := apptest.LoadBalancerRequest(tn, apptest.PoolTargets())
			edit(r)
			created, err := w.s.App.LoadBalancers.CreateLoadBalancer(tn.Ctx, r)
			if err != nil {
				t.Fatal(err)
			}
			got, err := w.s.App.LoadBalancers.GetLoadBalancer(tn.Ctx, &v1.GetLoadBalancerRequest{TenantId: tn.ID, LoadBalancerId: created.GetId()})
			if err != nil {
				t.Fatal(err)
			}
			for _, lb := range []*v1.LoadBalancer{created, got} {
				lb.State, lb.Address, lb.AddressV6, lb.LastError, lb.UpdateTime, lb.ReadyTime = "", "", "", "", nil, nil
			}
			if !proto.Equal(created, got) {
				t.Errorf("create answered\n%v\nget answers\n%v", created, got)
			}
			if created.GetHealthCheck().GetPath() != r.GetHealthCheck().GetPath() || len(created.GetForwarding()) != 1 {
				t.Errorf("create answered settings %v, asked %v", created, r)
			}
		})
	}
}
