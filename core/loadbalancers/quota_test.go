package loadbalancers_test

import (
	"context"
	"sync"
	"testing"

	"better-compute.dev/compute/apierr"
	"better-compute.dev/compute/app/apptest"
	v1 "better-compute.dev/compute/gen/go/bettercompute/compute/v1"
	"better-compute.dev/compute/gen/go/bettercompute/compute/v1/errcode"
)

// TestQuotaRace: 64 concurrent creates against a limit of 10 — exactly 10 succeed, the rest are
// QUOTA_EXCEEDED, and the row, the quota and the events agree.
func TestQuotaRace(t *testing.T) {
	s := apptest.Start(t)
	tn := s.NewTenant(t, "acme", "editor")
	const attempts, limit = 64, 10
	var (
		wg               sync.WaitGroup
		mu               sync.Mutex
		ok, quota, other int
	)
	for i := range attempts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := apptest.LoadBalancerRequest(tn, apptest.PoolTargets())
			r.IdempotencyKey = "race-" + string(rune('a'+i%26)) + string(rune('a'+i/26))
			_, err := s.App.LoadBalancers.CreateLoadBalancer(tn.Ctx, r)
			mu.Lock()
			defer mu.Unlock()
			switch apierr.CodeOf(err) {
			case "":
				ok++
			case errcode.QuotaExceeded:
				quota++
			default:
				other++
				t.Errorf("unexpected: %v", err)
			}
		}()
	}
	wg.Wait()
	if ok != limit || quota != attempts-limit || other != 0 {
		t.Fatalf("ok %d, quota %d, other %d; want %d, %d, 0", ok, quota, other, limit, attempts-limit)
	}
	var rows, events int
	q := s.App.DB.Q()
	_ = q.QueryRow(context.Background(), "SELECT count(*) FROM load_balancers").Scan(&rows)
	_ = q.QueryRow(context.Background(), `SELECT (SELECT count(*) FROM events WHERE type = 'providerLoadBalancer.created')
		 + (SELECT count(*) FROM event_inbox WHERE type = 'providerLoadBalancer.created')`).Scan(&events)
	if rows != limit || events != limit || used(t, s, tn) != limit {
		t.Fatalf("rows %d, events %d, used %d; want %d each", rows, events, used(t, s, tn), limit)
	}
}

// TestIdempotency: the same key with the same request returns the same load balancer (booked
// once), concurrently too; the same key with another request is INVALID_INPUT.
func TestIdempotency(t *testing.T) {
	s := apptest.Start(t)
	tn := s.NewTenant(t, "acme", "editor")
	svc := s.App
	r := apptest.LoadBalancerRequest(tn, apptest.PoolTargets())
	r.IdempotencyKey = "same-key"
	first, err := svc.LoadBalancers.CreateLoadBalancer(tn.Ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	// A client that lost the answer (or crashed after sending) retries: same load balancer.
	again, err := svc.LoadBalancers.CreateLoadBalancer(tn.Ctx, r)
	if err != nil || again.GetId() != first.GetId() {
		t.Fatalf("replay: %v %v", again, err)
	}
	changed := apptest.LoadBalancerRequest(tn, apptest.PoolTargets())
	changed.IdempotencyKey, changed.Name = "same-key", "other"
	_, err = svc.LoadBalancers.CreateLoadBalancer(tn.Ctx, changed)
	apptest.WantCode(t, err, errcode.InvalidInput, "idempotencyKey")

	// Sixteen concurrent twins with a fresh key: one load balancer, all answers name it.
	twin := apptest.LoadBalancerRequest(tn, apptest.PoolTargets())
	twin.IdempotencyKey = "twin-key"
	var wg sync.WaitGroup
	got := make([]string, 16)
	errs := make([]error, 16)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lb, err := svc.LoadBalancers.CreateLoadBalancer(tn.Ctx, twin)
			errs[i] = err
			got[i] = lb.GetId()
		}()
	}
	wg.Wait()
	for i := range got {
		if errs[i] != nil || got[i] != got[0] {
			t.Fatalf("twin %d: %q %v (first %q)", i, got[i], errs[i], got[0])
		}
	}
	if u := used(t, s, tn); u != 2 {
		t.Fatalf("quota used %d, want 2 (one per key)", u)
	}
	// Another tenant may use the same key: keys are per tenant.
	other := s.NewTenant(t, "globex", "editor")
	r2 := apptest.LoadBalancerRequest(other, apptest.PoolTargets())
	r2.IdempotencyKey = "same-key"
	if lb, err := svc.LoadBalancers.CreateLoadBalancer(other.Ctx, r2); err != nil || lb.GetId() == first.GetId() {
		t.Fatalf("other tenant: %v %v", lb, err)
	}
	// A key whose record expired is a new request.
	if _, err := s.App.DB.Q().Exec(context.Background(), "UPDATE idempotency_keys SET expires_at = now() - interval '1 second' WHERE idem_key = 'same-key' AND tenant_id = 'acme'"); err != nil {
		t.Fatal(err)
	}
	if lb, err := svc.LoadBalancers.CreateLoadBalancer(tn.Ctx, changed); err != nil || lb.GetId() == first.GetId() {
		t.Fatalf("after expiry: %v %v", lb, err)
	}
	var n int
	_ = s.App.DB.Q().QueryRow(context.Background(), "SELECT count(*) FROM idempotency_keys WHERE tenant_id = 'acme' AND idem_key = 'same-key'").Scan(&n)
	if n != 1 {
		t.Fatalf("%d records of one key", n)
	}
}

// TestFailedCreateKeepsNoUnit: a create books its unit first thing in its transaction
// (store/quota_booking.go); every way it can end without a load balancer (bad references, a replay, a
// twin's name taken) rolls the booking back with it, and no create writes a reservation row.
func TestFailedCreateKeepsNoUnit(t *testing.T) {
	t.Parallel()
	s := apptest.Start(t)
	tn := s.NewTenant(t, "refunds", "editor")
	svc := s.App
	first, err := svc.LoadBalancers.CreateLoadBalancer(tn.Ctx, apptest.LoadBalancerRequest(tn, apptest.PoolTargets()))
	if err != nil {
		t.Fatal(err)
	}
	badProject := apptest.LoadBalancerRequest(tn, apptest.PoolTargets())
	badProject.ProjectId = "prj_01m8y0000000000000000000"
	badRegion := apptest.LoadBalancerRequest(tn, apptest.PoolTargets())
	badRegion.Region = "ams3"
	takenName := apptest.LoadBalancerRequest(tn, apptest.PoolTargets())
	takenName.Name = first.GetName()
	replay := apptest.LoadBalancerRequest(tn, apptest.PoolTargets())
	if _, err := svc.LoadBalancers.CreateLoadBalancer(tn.Ctx, replay); err != nil {
		t.Fatal(err)
	}
	for name, r := range map[string]*v1.CreateLoadBalancerRequest{
		"unknown project": badProject, "region not offered": badRegion, "name taken": takenName, "replay": replay,
	} {
		_, err := svc.LoadBalancers.CreateLoadBalancer(tn.Ctx, r)
		if name == "replay" {
			if err != nil {
				t.Fatalf("replay: %v", err)
			}
		} else if err == nil {
			t.Fatalf("%s: created", name)
		}
		var left int64
		if err := s.App.DB.Pool().QueryRow(context.Background(), `SELECT count(*) FROM quota_reservations`).Scan(&left); err != nil {
			t.Fatal(err)
		}
		if u := used(t, s, tn); u != 2 || left != 0 {
			t.Fatalf("after %s: used %d, reservations %d; want 2 (the two load balancers), 0", name, u, left)
		}
	}
}
