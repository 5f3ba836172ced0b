// Package converge benchmarks the vps.provider-resources reconciler: how long N load balancers
// take to become ready with 1 and 3 replicas sharing the work, as a ratio to the simulator's
// own floor (its asynchronous delay plus N requests at the allowed request rate).
//
//	go test ./bench/converge -run '^$' -bench . -benchtime 1x
//	BC_BENCH_LARGE=1 go test ./bench/converge -run '^$' -bench . -benchtime 1x -timeout 30m   # adds N=1000
//
// BC_BENCH_RATE sets the simulated per-token budget in requests a minute (default 3000, so the
// default run stays short; DigitalOcean's real 250 a minute puts N=100's floor at 24 s).
package converge

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"better-compute.dev/compute/app/apptest"
	"better-compute.dev/compute/contract"
	"better-compute.dev/compute/provider/digitalocean"
	"better-compute.dev/compute/provider/digitalocean/sim"
	"better-compute.dev/compute/reconcile"
	"better-compute.dev/compute/reconcile/vps"
	"better-compute.dev/compute/store"
	"better-compute.dev/compute/store/storetest"
)

// The simulator's asynchronous delays: a load balancer is active after activeDelay and has its
// address after ipDelay, the longer of the two.
const (
	activeDelay = 300 * time.Millisecond
	ipDelay     = 500 * time.Millisecond
)

func BenchmarkConverge(b *testing.B) {
	sizes := []int{100}
	if os.Getenv("BC_BENCH_LARGE") != "" {
		sizes = append(sizes, 1000)
	}
	rate := 3000
	if v, err := strconv.Atoi(os.Getenv("BC_BENCH_RATE")); err == nil && v > 0 {
		rate = v
	}
	for _, n := range sizes {
		for _, replicas := range []int{1, 3} {
			b.Run(fmt.Sprintf("n=%d/replicas=%d", n, replicas), func(b *testing.B) {
				benchConverge(b, n, replicas, rate)
			})
		}
	}
}

// benchConverge records n load balancers with no replica running, then starts the replicas
// and measures until every one is ready. Besides the time and the requests it reports the
// replicas' database round trips per load balancer (db-trips/lb) and how many transactions
// ran again after losing a serialization race (tx-reruns/lb, process-wide: only the replicas
// write while it is measured).
func benchConverge(b *testing.B, n, replicas, ratePerMinute int) {
	simulator := sim.New(sim.Options{
		AcceptAnyToken: true, RequestsPerMinute: ratePerMinute, RequestsPerHour: 1 << 30,
		LoadBalancerActiveDelay: activeDelay, LoadBalancerIPDelay: ipDelay,
	})
	url, err := simulator.Start()
	if err != nil {
		b.Fatal(err)
	}
	defer simulator.Close()
	s := apptest.Start(b)
	s.SimulatorURL = url
	floor := ipDelay + time.Duration(float64(n)/(float64(ratePerMinute)/60)*float64(time.Second))

	var total time.Duration
	var requests int
	var roundTrips, retries int64
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		tn := s.NewTenant(b, fmt.Sprintf("bench-%d-%d-%d", n, replicas, i), "editor")
		pool := s.NewPool(b, tn.ID, tn.AccountID, "big", int64(n))
		s.NewPoolLoadBalancers(b, tn, pool, n)
		simulator.ResetRequests()
		var trips storetest.RoundTrips
		start, stop := startReplicas(b, s, replicas, ratePerMinute, &trips)
		retriesBefore := store.TransactionRetries()
		b.StartTimer()
		began := time.Now()
		start()
		timeline := waitReady(b, s.App.DB, tn.ID, n, simulator, began)
		total += time.Since(began)
		b.StopTimer()
		retries += store.TransactionRetries() - retriesBefore
		stop()
		b.Logf("timeline (s: creates sent, lists sent, ready): %s", timeline)
		byRoute := simulator.Requests()
		for _, c := range byRoute {
			requests += c
		}
		b.Logf("requests by route: %v", byRoute)
		roundTrips += trips.Count()
	}
	perRun := total / time.Duration(b.N)
	b.ReportMetric(perRun.Seconds(), "s/converge")
	b.ReportMetric(floor.Seconds(), "s-floor")
	b.ReportMetric(float64(perRun)/float64(floor), "x-floor")
	b.ReportMetric(float64(requests)/float64(b.N)/float64(n), "requests/lb")
	b.ReportMetric(float64(roundTrips)/float64(b.N)/float64(n), "db-trips/lb")
	b.ReportMetric(float64(retries)/float64(b.N)/float64(n), "tx-reruns/lb")
}

// startReplicas prepares replicas reconcile runners, each with its own database pool and its
// own limiter registry (as separate processes have), drawing on one rate budget kept in the
// database (as replicas sharing a token at the provider must); start runs them (the
// measurement begins there, not with opening the pools), stop ends them.
//
// Every replica's pool counts its database round trips into trips (a batch is one): what the
// replicas cost the database per converged load balancer, which this shared machine's load
// does not change.
func startReplicas(b *testing.B, s *apptest.Stack, replicas, ratePerMinute int, trips *storetest.RoundTrips) (start, stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var dbs []*store.DB
	var runners []*reconcile.Runner
	for r := range replicas {
		db, err := store.Open(store.WithTracer(ctx, trips), s.Schema.URL)
		if err != nil {
			b.Fatal(err)
		}
		dbs = append(dbs, db)
		rec, err := vps.New(vps.Options{
			DB: db, Keyring: s.App.Base.Keyring, ProviderPoll: 250 * time.Millisecond,
			Factory: digitalocean.NewFactory(digitalocean.Options{
				RequestsPerMinute: ratePerMinute, Limiters: digitalocean.NewLimiters(), Budget: vps.Budget{DB: db},
				Transport: vps.DeadlineTransport(nil),
			}),
			Logger: benchLogger(),
		})
		if err != nil {
			b.Fatal(err)
		}
		runner, err := reconcile.New(reconcile.Options{
			DB: db, Holder: "bench-" + strconv.Itoa(r), Handlers: map[string]reconcile.Handler{contract.VPSKind: rec},
			Concurrency: 8, PollInterval: 20 * time.Millisecond,
			Backoff: reconcile.Exponential{Initial: 100 * time.Millisecond, Max: 2 * time.Second, Jitter: 0.2},
			Logger:  benchLogger(),
		})
		if err != nil {
			b.Fatal(err)
		}
		if err := runner.Every(vps.PeriodicKind, time.Minute, rec.Periodic()); err != nil {
			b.Fatal(err)
		}
		runners = append(runners, runner)
	}
	start = func() {
		for _, runner := range runners {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_ = runner.Run(ctx)
			}()
		}
	}
	return start, func() {
		cancel()
		wg.Wait()
		for _, db := range dbs {
			db.Close()
		}
	}
}

// waitReady polls until the tenant has n ready load balancers; it returns a timeline of the
// creates and lists the simulator counted and the ready rows, every half second.
func waitReady(b *testing.B, db *store.DB, tenantID string, n int, simulator *sim.Server, began time.Time) string {
	deadline := time.Now().Add(30 * time.Minute)
	var timeline strings.Builder
	next := began
	for {
		rows, err := store.ListLoadBalancers(context.Background(), db.Q(), store.ListLoadBalancersParams{TenantID: tenantID, Limit: 1000})
		if err != nil {
			b.Fatal(err)
		}
		ready := 0
		for _, row := range rows {
			if row.State == "ready" {
				ready++
			}
		}
		if now := time.Now(); ready == n || now.After(next) {
			got := simulator.Requests()
			fmt.Fprintf(&timeline, " %.1f:%d/%d/%d", now.Sub(began).Seconds(), got["POST /v2/load_balancers"], got["GET /v2/load_balancers"], ready)
			next = next.Add(500 * time.Millisecond)
		}
		if ready == n {
			return timeline.String()
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d load balancers ready", ready, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// benchLogger discards the replicas' logs unless BC_BENCH_LOG is set (then warnings go to
// standard error).
func benchLogger() *slog.Logger {
	if os.Getenv("BC_BENCH_LOG") == "" {
		return slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}
