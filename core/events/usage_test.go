package events_test

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
)

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
