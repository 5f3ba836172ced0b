package vps_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"testing"
	"time"

	"better-compute.dev/compute/app"
	"better-compute.dev/compute/contract"
	"better-compute.dev/compute/provider/digitalocean"
	"better-compute.dev/compute/provider/digitalocean/sim"
	"better-compute.dev/compute/reconcile"
	"better-compute.dev/compute/reconcile/vps"
	"better-compute.dev/compute/store"
)

// TestRequestsPerConvergedLoadBalancer: converging many load balancers costs their creates
// and a few paginated lists, not a get per load balancer per poll: at most 1.2 requests per
// load balancer in all, counted at the simulator (a count, not a timing). Lists are spaced by
// the provider poll, so it is the bench's 250 ms here: what the count bounds is lists per load
// balancer, not how fast this machine runs passes.
func TestRequestsPerConvergedLoadBalancer(t *testing.T) {
	const n = 100
	e := newEnvWith(t, "tn_budget", n, func(c *app.Config) { c.Reconcilers.ProviderPoll = countingPoll })
	e.sim.ResetRequests()
	for i := range n {
		e.createLB(t, e.lbRequest(fmt.Sprintf("lb-%d", i), pool()))
	}
	e.waitReady(t, n)
	assertRequests(t, e.sim.Requests(), n)
}

// TestRequestsPerConvergedLoadBalancerThreeReplicas: three replicas, each with its own
// database pool and limiter registry as separate processes have, drawing on one token budget
// kept in the database, converge many load balancers for the same count: one replica lists
// for all of them (provider_lists), the others read what it recorded.
func TestRequestsPerConvergedLoadBalancerThreeReplicas(t *testing.T) {
	const n, replicas, perMinute = 100, 3, 6000
	e := startEnv(t, "tn_budget3", n, sim.Options{
		AcceptAnyToken: true, RequestsPerMinute: 100000, RequestsPerHour: 1000000,
		LoadBalancerActiveDelay: 150 * time.Millisecond, LoadBalancerIPDelay: 250 * time.Millisecond,
	})
	for i := range n {
		e.createLB(t, e.lbRequest(fmt.Sprintf("lb-%d", i), pool()))
	}
	e.sim.ResetRequests()

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	for r := range replicas {
		db, err := store.Open(ctx, e.s.Schema.URL)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(db.Close)
		rec, err := vps.New(vps.Options{
			DB: db, Keyring: e.s.App.Base.Keyring, ProviderPoll: countingPoll, DependencyPoll: 200 * time.Millisecond,
			Factory: digitalocean.NewFactory(digitalocean.Options{RequestsPerMinute: perMinute, Limiters: digitalocean.NewLimiters(),
				Budget: vps.Budget{DB: db}}),
			Logger: quiet,
		})
		if err != nil {
			t.Fatal(err)
		}
		runner, err := reconcile.New(reconcile.Options{
			DB: db, Holder: "replica-" + strconv.Itoa(r), Handlers: map[string]reconcile.Handler{contract.VPSKind: rec},
			Concurrency: 8, PollInterval: 20 * time.Millisecond,
			Backoff: reconcile.Exponential{Initial: 50 * time.Millisecond, Max: 500 * time.Millisecond, Jitter: 0.2},
			Logger:  quiet,
		})
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = runner.Run(ctx)
		}()
	}
	e.waitReady(t, n)
	assertRequests(t, e.sim.Requests(), n)
}

// countingPoll is the provider poll of the counting tests.
const countingPoll = 250 * time.Millisecond

// waitReady waits until the tenant has n ready load balancers.
func (e *env) waitReady(t *testing.T, n int) {
	t.Helper()
	eventually(t, "every load balancer ready", func() (bool, string) {
		rows, err := store.ListLoadBalancers(e.ctx, e.s.App.DB.Q(), store.ListLoadBalancersParams{TenantID: e.tn.ID, Limit: 1000})
		ready := 0
		for _, r := range rows {
			if r.State == "ready" {
				ready++
			}
		}
		return err == nil && ready == n, fmt.Sprintf("%d of %d ready (%v)", ready, n, err)
	})
}

// assertRequests checks the requests by route the simulator counted for n load balancers.
func assertRequests(t *testing.T, got map[string]int, n int) {
	t.Helper()
	total := 0
	for _, c := range got {
		total += c
	}
	if got["POST /v2/load_balancers"] != n {
		t.Errorf("%d creates for %d load balancers, want one each: %v", got["POST /v2/load_balancers"], n, got)
	}
	if g := got["GET /v2/load_balancers/{id}"]; g != 0 {
		t.Errorf("%d gets by id, want the status polled by listing: %v", g, got)
	}
	if float64(total) > 1.2*float64(n) {
		t.Errorf("%d requests for %d load balancers (%.2f each), want at most 1.2 each: %v", total, n, float64(total)/float64(n), got)
	}
	t.Logf("%d requests for %d load balancers: %v", total, n, got)
}
