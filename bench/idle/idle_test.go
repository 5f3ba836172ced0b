// Package idle measures what a settled fleet costs when nothing changes, by counts in one run:
// the database's own transactions (pg_stat_database: xact_commit + xact_rollback of a database
// the benchmark owns alone) and the provider requests (the simulator's count) over a window of
// several periodic intervals, first with no load balancer, then with N ready load balancers on
// one provider account. The replica runs its reconcilers as a deployment does (the runner's
// default claim poll), with a short periodic interval so the window spans many of them.
//
//	go test -count=1 -run '^$' -bench Idle -benchtime 1x ./bench/idle
//
// BC_BENCH_IDLE_N (default 1000) is the number of load balancers, BC_BENCH_INTERVAL (default 2s)
// the periodic interval and BC_BENCH_WINDOW (default 30s) how long each phase is counted.
package idle

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"better-compute.dev/compute/app"
	"better-compute.dev/compute/app/apptest"
	"better-compute.dev/compute/contract"
	"better-compute.dev/compute/provider/digitalocean/sim"
	"better-compute.dev/compute/store"
	"better-compute.dev/compute/store/storetest"
)

func envDuration(name string, def time.Duration) time.Duration {
	if d, err := time.ParseDuration(os.Getenv(name)); err == nil && d > 0 {
		return d
	}
	return def
}

// providerPoll is the replica's provider poll (the shared list's interval) in the benchmark.
const providerPoll = 500 * time.Millisecond

func BenchmarkIdle(b *testing.B) {
	n := 1000
	if v, err := strconv.Atoi(os.Getenv("BC_BENCH_IDLE_N")); err == nil && v > 0 {
		n = v
	}
	interval := envDuration("BC_BENCH_INTERVAL", 2*time.Second)
	window := envDuration("BC_BENCH_WINDOW", 30*time.Second)
	xacts := storetest.OwnDatabase(b, "bench_idle_")

	simulator := sim.New(sim.Options{
		AcceptAnyToken: true, RequestsPerMinute: 1 << 20, RequestsPerHour: 1 << 30,
		LoadBalancerActiveDelay: 300 * time.Millisecond, LoadBalancerIPDelay: 500 * time.Millisecond,
	})
	url, err := simulator.Start()
	if err != nil {
		b.Fatal(err)
	}
	defer simulator.Close()
	s := apptest.Start(b, apptest.WithReconcile(), func(c *app.Config) {
		r := &c.Reconcilers
		r.PeriodicInterval, r.ProviderPoll = interval, providerPoll
		r.DigitalOcean.RequestsPerMinute, r.DigitalOcean.Burst = 1<<20, 200
	})
	s.SimulatorURL = url
	for i := 0; i < b.N; i++ {
		// Empty: what the replica costs with nothing to reconcile.
		settle(interval)
		emptyTx := count(xacts, window)

		tn := s.NewTenant(b, fmt.Sprintf("idle-%d", i), "editor")
		pool := s.NewPool(b, tn.ID, tn.AccountID, "big", int64(n))
		s.NewPoolLoadBalancers(b, tn, pool, n)
		waitSettled(b, s.App.DB, tn.ID, n, interval)

		// Settled: the same window with n ready load balancers and nothing changing.
		passesBefore := lbPasses(b, s.App.DB)
		simulator.ResetRequests()
		fleetTx := count(xacts, window)
		byRoute := simulator.Requests()
		passes := lbPasses(b, s.App.DB) - passesBefore
		requests := 0
		for _, c := range byRoute {
			requests += c
		}
		minutes := window.Minutes()
		intervals := float64(window) / float64(interval)
		b.Logf("n=%d interval=%s window=%s: transactions empty %d, with the fleet %d; load balancer passes %d; requests %v",
			n, interval, window, emptyTx, fleetTx, passes, byRoute)
		b.ReportMetric(float64(fleetTx)/float64(n)/minutes, "tx/lb/min")
		b.ReportMetric(float64(fleetTx-emptyTx)/float64(n)/minutes, "added-tx/lb/min")
		b.ReportMetric(float64(fleetTx-emptyTx)/float64(n)/intervals, "added-tx/lb/interval")
		b.ReportMetric(float64(emptyTx)/window.Seconds(), "tx/s-empty")
		b.ReportMetric(float64(fleetTx)/window.Seconds(), "tx/s-fleet")
		b.ReportMetric(float64(passes)/float64(n)/intervals, "passes/lb/interval")
		b.ReportMetric(float64(requests)/intervals, "requests/account/interval")
		b.ReportMetric(float64(requests)/(float64(window)/float64(providerPoll)), "requests/account/poll")
	}
}

// settle lets the replica reach its steady pace (and the server publish its counts).
func settle(interval time.Duration) {
	time.Sleep(max(3*time.Second, 2*interval))
}

// count is the database's transactions over window, after a settling pause: the server
// publishes a backend's counts at most once a second while it is busy.
func count(xacts func() int64, window time.Duration) int64 {
	time.Sleep(time.Second)
	a := xacts()
	time.Sleep(window)
	return xacts() - a
}

// lbPasses is how many passes over load balancers were granted so far (the epochs of their
// work items).
func lbPasses(b *testing.B, db *store.DB) int64 {
	var sum int64
	if err := db.Q().QueryRow(context.Background(),
		`SELECT coalesce(sum(epoch), 0) FROM work_items WHERE kind = $1 AND resource_id LIKE 'plb_%'`, contract.VPSKind).Scan(&sum); err != nil {
		b.Fatal(err)
	}
	return sum
}

// waitSettled waits until the tenant's n load balancers are ready and nothing of the
// reconciler is due (or a few intervals passed), then two periodic intervals more, so the window counts a fleet at rest.
func waitSettled(b *testing.B, db *store.DB, tenantID string, n int, interval time.Duration) {
	ctx := context.Background()
	deadline := time.Now().Add(20 * time.Minute)
	for {
		var ready int
		if err := db.Q().QueryRow(ctx, `SELECT count(*) FROM load_balancers WHERE tenant_id = $1 AND state = 'ready'`, tenantID).Scan(&ready); err != nil {
			b.Fatal(err)
		}
		if ready == n {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d load balancers ready", ready, n)
		}
		time.Sleep(200 * time.Millisecond)
	}
	// A periodic pass that queues every load balancer never leaves the queue empty: wait at
	// most a few intervals for it.
	for quiet := time.Now().Add(5 * interval); time.Now().Before(quiet); time.Sleep(200 * time.Millisecond) {
		due, err := store.CountDue(ctx, db, []string{contract.VPSKind}, time.Time{})
		if err != nil {
			b.Fatal(err)
		}
		if due == 0 {
			break
		}
	}
	settle(interval)
}
