package core_test

import (
	"context"
	"math"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"better-compute.dev/compute/app/apptest"
	"better-compute.dev/compute/core/events"
	v1 "better-compute.dev/compute/gen/go/bettercompute/compute/v1"
	"better-compute.dev/compute/lifecycle"
	"better-compute.dev/compute/store"
)

// TestList: "Returns the tenant's load balancers in the order they were made (at most 1000),
// optionally of one pool or project. Deleted ones only with includeDeleted."
func TestList(t *testing.T) {
	s := apptest.Start(t)
	tn := s.NewTenant(t, "acme", "editor")
	svc := s.App
	second := s.NewPool(t, tn.ID, tn.AccountID, "second", 10)
	prj, err := svc.Tenancy.CreateProject(tn.Ctx, &v1.CreateProjectRequest{TenantId: tn.ID, Name: "shop"})
	if err != nil {
		t.Fatal(err)
	}
	var made []string
	for i := range 6 {
		r := regional(tn, poolTargets())
		if i%2 == 1 {
			r.PoolId = second
		}
		if i == 4 {
			r.ProjectId = prj.GetId()
		}
		lb, err := svc.LoadBalancers.CreateLoadBalancer(tn.Ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		made = append(made, lb.GetId())
	}
	ctx := context.Background()
	if _, err := store.RecordLoadBalancerObservation(ctx, s.App.DB.Q(), store.LoadBalancerObservation{ID: made[0], State: "deleted", MarkDeleted: true}); err != nil {
		t.Fatal(err)
	}
	list := func(r *v1.ListLoadBalancersRequest) []string {
		r.TenantId = tn.ID
		lbs, err := svc.LoadBalancers.ListLoadBalancers(tn.Ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, lb := range lbs {
			out = append(out, lb.GetId())
		}
		return out
	}
	for _, tc := range []struct {
		reason string
		req    *v1.ListLoadBalancersRequest
		want   []string
	}{
		{"creation order, deleted left out", &v1.ListLoadBalancersRequest{}, made[1:]},
		{"deleted ones with includeDeleted", &v1.ListLoadBalancersRequest{IncludeDeleted: true}, made},
		{"one pool", &v1.ListLoadBalancersRequest{PoolId: second}, []string{made[1], made[3], made[5]}},
		{"one project", &v1.ListLoadBalancersRequest{ProjectId: prj.GetId()}, []string{made[4]}},
	} {
		if got := list(tc.req); !equal(got, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.reason, got, tc.want)
		}
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestUsage: vps.load-balancer.hours from ready until deleted, clipped to the asked window.
func TestUsage(t *testing.T) {
	s := apptest.Start(t)
	tn := s.NewTenant(t, "acme", "editor")
	ctx := context.Background()
	q := s.App.DB.Q()
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	for _, row := range []struct {
		id         string
		start, end time.Time
	}{
		{"use_a", t0, t0.Add(10 * time.Hour)},
		{"use_b", t0.Add(5 * time.Hour), time.Time{}},
	} {
		var end *time.Time
		if !row.end.IsZero() {
			end = &row.end
		}
		if _, err := q.Exec(ctx, `INSERT INTO usage_records (id, tenant_id, meter, resource_id, started_at, ended_at) VALUES ($1, $2, $3, $4, $5, $6)`,
			row.id, tn.ID, lifecycle.MeterLoadBalancerHours, "plb_"+row.id, row.start, end); err != nil {
			t.Fatal(err)
		}
	}
	recs, totals, err := s.App.Events.ListUsage(tn.Ctx, &v1.ListUsageRequest{TenantId: tn.ID,
		StartTime: timestamppb.New(t0.Add(2 * time.Hour)), EndTime: timestamppb.New(t0.Add(12 * time.Hour))})
	if err != nil || len(recs) != 2 {
		t.Fatalf("%v %v", recs, err)
	}
	// a: 2h..10h = 8h; b: 5h..12h (still running, clipped to the window) = 7h.
	if recs[0].GetQuantity() != 8 || recs[1].GetQuantity() != 7 || totals[lifecycle.MeterLoadBalancerHours] != 15 || recs[1].GetEndTime() != nil {
		t.Fatalf("records %v totals %v", recs, totals)
	}
	other := s.NewTenant(t, "globex", "editor")
	if recs, _, err := s.App.Events.ListUsage(other.Ctx, &v1.ListUsageRequest{TenantId: other.ID}); err != nil || len(recs) != 0 {
		t.Fatalf("other tenant sees %v %v", recs, err)
	}
}

func TestUsageHours(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	h := func(n float64) time.Time { return t0.Add(time.Duration(n * float64(time.Hour))) }
	end := h(3)
	for _, tc := range []struct {
		reason        string
		start         time.Time
		end           *time.Time
		from, to, now time.Time
		want          float64
	}{
		{"inside the window", h(1), &end, h(0), h(10), h(20), 2},
		{"running: up to now", h(1), nil, h(0), h(10), h(4.5), 3.5},
		{"running: clipped to the window", h(1), nil, h(0), h(2), h(9), 1},
		{"before the window", h(1), &end, h(5), h(10), h(20), 0},
		{"starts before the window", h(1), &end, h(2), h(10), h(20), 1},
	} {
		if got := events.UsageHours(tc.start, tc.end, tc.from, tc.to, tc.now); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("%s: %v, want %v", tc.reason, got, tc.want)
		}
	}
}
