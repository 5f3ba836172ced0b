package lifecycle_test

import (
	"context"
	"maps"
	"slices"
	"testing"
	"time"

	"better-compute.dev/compute/app"
	"better-compute.dev/compute/app/apptest"
	v1 "better-compute.dev/compute/gen/go/bettercompute/compute/v1"
	"better-compute.dev/compute/lifecycle"
	"better-compute.dev/compute/provider/digitalocean/sim"
	"better-compute.dev/compute/store"
)

// renamed replaces k's rules, for the test, by the same rules under other names (quota, meter
// and event types prefixed), and puts them back once the replica has stopped. A replica that
// then books, meters and publishes the renamed ones reads the table: a literal left in core or
// in a writer would book, meter or publish the seed's name instead.
func renamed(t *testing.T, k *lifecycle.Kind, quotaAs string) {
	t.Helper()
	saved := k.Rules
	t.Cleanup(func() { k.Rules = saved })
	next := maps.Clone(saved)
	for tr, r := range next {
		if r.Books != "" {
			r.Books = quotaAs
		}
		if r.Refunds != "" {
			r.Refunds = quotaAs
		}
		if r.Starts != "" {
			r.Starts = "lifecycletest." + r.Starts
		}
		if r.Stops != "" {
			r.Stops = "lifecycletest." + r.Stops
		}
		if r.Event != "" {
			r.Event = "lifecycletest." + r.Event
		}
		next[tr] = r
	}
	k.Rules = next
}

// TestReplicaFollowsTheTable drives a load balancer (create, ready, update, ready again,
// delete, deleted) and an instance (create, running, delete, deleted) through a replica with
// its reconcilers against the DigitalOcean simulator, under renamed rules, and checks that the
// replica booked, refunded, metered and published exactly what the tables say, and nothing
// under the seed's names.
func TestReplicaFollowsTheTable(t *testing.T) {
	// Renamed before the replica starts and put back after it stops (cleanups run last first).
	renamed(t, lifecycle.LoadBalancer, "lifecycleTestLoadBalancers")
	renamed(t, lifecycle.Instance, "lifecycleTestInstances")

	simulator := sim.New(sim.Options{AcceptAnyToken: true, RequestsPerMinute: 100000, RequestsPerHour: 1000000,
		LoadBalancerActiveDelay: 50 * time.Millisecond, LoadBalancerIPDelay: 50 * time.Millisecond})
	simURL, err := simulator.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = simulator.Close() })
	s := apptest.Start(t, apptest.WithReconcile(), func(c *app.Config) {
		r := &c.Reconcilers
		r.PollInterval, r.ProviderPoll, r.DependencyPoll = 20*time.Millisecond, 50*time.Millisecond, 50*time.Millisecond
		r.BackoffInitial, r.BackoffMax = 20*time.Millisecond, 200*time.Millisecond
	})
	s.SimulatorURL = simURL
	tn := s.NewTenant(t, "lifecycle", "editor")
	svc := s.App
	for _, k := range []*lifecycle.Kind{lifecycle.LoadBalancer, lifecycle.Instance} {
		if _, err := svc.Pools.SetQuota(s.AdminCtx, &v1.SetQuotaRequest{TenantId: tn.ID, PoolId: tn.PoolID, Resource: k.Quota(), Limit: 1}); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	db := s.App.DB.Q()
	rule := func(k *lifecycle.Kind, tr lifecycle.Transition) lifecycle.Rule {
		r, ok := k.Rule(tr)
		if !ok {
			t.Fatalf("%s has no rule for %s", k.Name, tr)
		}
		return r
	}
	quotaUsed := func(resource string) int64 {
		qs, err := store.ListQuotas(ctx, db, tn.ID, tn.PoolID)
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range qs {
			if q.Resource == resource {
				return q.Used
			}
		}
		t.Fatalf("no quota row %s", resource)
		return 0
	}
	usage := func(id string) []store.UsageRecord {
		all, err := store.ListUsage(ctx, db, tn.ID, "", time.Unix(0, 0), time.Now().Add(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		return slices.DeleteFunc(all, func(u store.UsageRecord) bool { return u.ResourceID != id })
	}
	events := func(id string) []store.Event {
		evs, err := store.ListEvents(ctx, db, tn.ID, 0, 1000, id)
		if err != nil {
			t.Fatal(err)
		}
		return evs
	}
	waitLB := func(id string, ok func(store.LoadBalancer) bool) {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for {
			row, err := store.GetLoadBalancer(ctx, db, id)
			if err != nil {
				t.Fatal(err)
			}
			if ok(row) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("load balancer %s stays %s (%s)", id, row.State, row.LastError)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	applied := func(state string) func(store.LoadBalancer) bool {
		return func(r store.LoadBalancer) bool { return r.State == state && r.AppliedVersion >= r.SpecVersion }
	}

	// The load balancer.
	LB := lifecycle.LoadBalancer
	pool := true
	lb, err := svc.LoadBalancers.CreateLoadBalancer(tn.Ctx, &v1.CreateLoadBalancerRequest{
		TenantId: tn.ID, PoolId: tn.PoolID, Name: "web", Region: "nyc3", IdempotencyKey: "life-1",
		Targets:    &v1.LoadBalancerTargets{Pool: &pool},
		Forwarding: []*v1.ForwardingRule{{EntryProtocol: "http", EntryPort: 80, TargetProtocol: "http", TargetPort: 8080}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := quotaUsed(rule(LB, lifecycle.Create).Books); got != 1 {
		t.Errorf("the create booked %d of %s, want 1", got, rule(LB, lifecycle.Create).Books)
	}
	waitLB(lb.GetId(), applied("ready"))
	if u := usage(lb.GetId()); len(u) != 1 || u[0].Meter != rule(LB, lifecycle.Ready).Starts || u[0].EndedAt != nil {
		t.Errorf("ready opens one interval of %s: %+v", rule(LB, lifecycle.Ready).Starts, u)
	}
	redirect := true
	if _, err := svc.LoadBalancers.UpdateLoadBalancer(tn.Ctx, &v1.UpdateLoadBalancerRequest{
		TenantId: tn.ID, LoadBalancerId: lb.GetId(), RedirectHttpToHttps: &redirect,
	}); err != nil {
		t.Fatal(err)
	}
	waitLB(lb.GetId(), func(r store.LoadBalancer) bool { return applied("ready")(r) && r.SpecVersion > 1 })
	if _, err := svc.LoadBalancers.DeleteLoadBalancer(tn.Ctx, &v1.DeleteLoadBalancerRequest{TenantId: tn.ID, LoadBalancerId: lb.GetId()}); err != nil {
		t.Fatal(err)
	}
	waitLB(lb.GetId(), func(r store.LoadBalancer) bool { return r.State == "deleted" })

	var want []lifecycle.Rule
	for _, tr := range []lifecycle.Transition{lifecycle.Create, lifecycle.Ready, lifecycle.Update, lifecycle.Ready, lifecycle.Delete, lifecycle.Deleted} {
		if r := rule(LB, tr); r.Event != "" {
			want = append(want, r)
		}
	}
	evs := events(lb.GetId())
	var types, wantTypes []string
	for _, e := range evs {
		types = append(types, e.Type)
	}
	for _, r := range want {
		wantTypes = append(wantTypes, r.Event)
	}
	if !slices.Equal(types, wantTypes) {
		t.Errorf("the load balancer's events: %v, want the table's %v", types, wantTypes)
	} else {
		for i, e := range evs {
			for _, key := range want[i].Data {
				if _, ok := e.Data[key]; !ok {
					t.Errorf("%s lacks %s: %v", e.Type, key, e.Data)
				}
			}
		}
	}
	if u := usage(lb.GetId()); len(u) != 1 || u[0].Meter != rule(LB, lifecycle.Deleted).Stops || u[0].EndedAt == nil {
		t.Errorf("deleted closes the interval of %s: %+v", rule(LB, lifecycle.Deleted).Stops, u)
	}
	if got := quotaUsed(rule(LB, lifecycle.Deleted).Refunds); got != 0 {
		t.Errorf("deleted left %d of %s booked", got, rule(LB, lifecycle.Deleted).Refunds)
	}
	if got := quotaUsed(lifecycle.QuotaLoadBalancers); got != 0 {
		t.Errorf("the seed's loadBalancers quota was booked (%d) beside the table's", got)
	}

	// The instance.
	IN := lifecycle.Instance
	in, err := svc.Resources.CreateInstance(tn.Ctx, &v1.CreateInstanceRequest{TenantId: tn.ID, PoolId: tn.PoolID, Name: "vm", Region: "nyc3", Flavor: "small"})
	if err != nil {
		t.Fatal(err)
	}
	if got := quotaUsed(rule(IN, lifecycle.Create).Books); got != 1 {
		t.Errorf("the instance booked %d of %s, want 1", got, rule(IN, lifecycle.Create).Books)
	}
	if _, err := svc.Resources.CreateInstance(tn.Ctx, &v1.CreateInstanceRequest{TenantId: tn.ID, PoolId: tn.PoolID, Name: "vm2", Region: "nyc3", Flavor: "small"}); err == nil {
		t.Errorf("a second instance was made on a table quota of 1")
	}
	waitIn := func(state string) {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for {
			row, err := store.GetInstance(ctx, db, in.GetId())
			if err != nil {
				t.Fatal(err)
			}
			if row.State == state {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("instance stays %s (%s)", row.State, row.LastError)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitIn("running")
	if _, err := svc.Resources.DeleteInstance(tn.Ctx, &v1.DeleteInstanceRequest{TenantId: tn.ID, InstanceId: in.GetId()}); err != nil {
		t.Fatal(err)
	}
	waitIn("deleted")
	if got := quotaUsed(rule(IN, lifecycle.Deleted).Refunds); got != 0 {
		t.Errorf("deleted left %d of %s booked", got, rule(IN, lifecycle.Deleted).Refunds)
	}
	if got := quotaUsed(lifecycle.QuotaInstances); got != 0 {
		t.Errorf("the seed's instances quota was booked (%d) beside the table's", got)
	}
	if evs := events(in.GetId()); len(evs) != 0 {
		t.Errorf("an instance publishes nothing in the table; got %v", evs)
	}
	if u := usage(in.GetId()); len(u) != 0 {
		t.Errorf("an instance is metered by nothing in the table; got %v", u)
	}
}
