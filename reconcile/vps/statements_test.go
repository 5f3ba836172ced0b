package vps_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"better-compute.dev/compute/contract"
	"better-compute.dev/compute/lifecycle"
	"better-compute.dev/compute/provider/digitalocean"
	"better-compute.dev/compute/provider/digitalocean/sim"
	"better-compute.dev/compute/reconcile"
	"better-compute.dev/compute/reconcile/vps"
	"better-compute.dev/compute/store"
)

// statements is a store.Tracer counting what a replica's pool sends: statements (each query of a
// batch counts) and round trips (a batch is one), and the statements' first words for the log.
type statements struct {
	store.NoTracer
	mu     sync.Mutex
	stmts  int
	trips  int
	shapes []string
}

type inTracedBatch struct{}

func (s *statements) StatementStart(ctx context.Context, sql string, _ []any) context.Context {
	if ctx.Value(inTracedBatch{}) == nil {
		s.count(1, sql)
	}
	return ctx
}
func (s *statements) BatchStart(ctx context.Context, _ []string) context.Context {
	s.mu.Lock()
	s.trips++
	s.mu.Unlock()
	return context.WithValue(ctx, inTracedBatch{}, true)
}
func (s *statements) BatchStatement(_ context.Context, sql string, _ []any, _ error) {
	s.count(0, "  batch: "+sql)
}

func (s *statements) count(trips int, sql string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stmts++
	s.trips += trips
	s.shapes = append(s.shapes, strings.Join(strings.Fields(sql), " ")[:min(90, len(strings.Join(strings.Fields(sql), " ")))])
}

// take returns the counts since the last take and resets them.
func (s *statements) take() (stmts, trips int, shapes []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	stmts, trips, shapes = s.stmts, s.trips, s.shapes
	s.stmts, s.trips, s.shapes = 0, 0, nil
	return stmts, trips, shapes
}

// TestStatementsPerLoadBalancerPass counts what one load balancer's two passes send to the
// database (a count, not a timing): the create pass (claim, reads, the fenced create-pending
// mark, the create, the fenced record of the new load balancer, the requeue) and the ready pass
// a list wakes (claim, reads, the fenced ready write with its event and meter, the completion).
// The bench's replicas run at Concurrency slots each: a pass that is pure bookkeeping holds a
// slot a create could use for as long as its statements take.
func TestStatementsPerLoadBalancerPass(t *testing.T) {
	e := startEnv(t, "tn_stmts", 10, sim.Options{
		AcceptAnyToken: true, RequestsPerMinute: 100000, RequestsPerHour: 1000000,
		LoadBalancerActiveDelay: 50 * time.Millisecond, LoadBalancerIPDelay: 100 * time.Millisecond,
	})
	lb := e.createLB(t, e.lbRequest("counted", pool()))

	var tr statements
	ctx := context.Background()
	db, err := store.Open(store.WithTracer(ctx, &tr), e.s.Schema.URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	const poll = 250 * time.Millisecond
	rec, err := vps.New(vps.Options{
		DB: db, Keyring: e.s.App.Base.Keyring, ProviderPoll: poll,
		Factory: digitalocean.NewFactory(digitalocean.Options{RequestsPerMinute: 6000, Limiters: digitalocean.NewLimiters(),
			Budget: vps.Budget{DB: db}}),
		Logger: quiet,
	})
	if err != nil {
		t.Fatal(err)
	}
	runner, err := reconcile.New(reconcile.Options{
		DB: db, Holder: "counted", Handlers: map[string]reconcile.Handler{contract.VPSKind: rec}, Concurrency: 8, Logger: quiet,
	})
	if err != nil {
		t.Fatal(err)
	}
	tr.take() // opening the pool

	pass := func(what string) (int, int) {
		t.Helper()
		n, err := runner.RunOnce(ctx)
		if err != nil || n != 1 {
			t.Fatalf("%s: ran %d items: %v", what, n, err)
		}
		stmts, trips, shapes := tr.take()
		t.Logf("%s: %d statements, %d round trips", what, stmts, trips)
		if os.Getenv("BC_TRACE_SQL") != "" {
			for _, sh := range shapes {
				t.Logf("  %s", sh)
			}
		}
		return stmts, trips
	}
	createStmts, createTrips := pass("create pass")
	if row := e.lbRow(t, lb.GetId()); row.ProviderID == "" || row.State == "ready" {
		t.Fatalf("after the create pass: %+v", row)
	}

	// The account's watcher lists and wakes the parked load balancer; wait for that, then for
	// the watcher to go idle (nothing parked), so that the next counts are the pass's alone.
	eventually(t, "the watcher wakes the load balancer", func() (bool, string) {
		item, err := store.GetWorkItem(ctx, db, contract.VPSKind, lb.GetId())
		return err == nil && item.DueAt != nil && !item.DueAt.After(time.Now()), fmt.Sprintf("%+v %v", item, err)
	})
	time.Sleep(poll + poll/4)
	_, _, watched := tr.take()
	t.Logf("watcher: %d statements", len(watched))

	readyStmts, readyTrips := pass("ready pass")
	if row := e.lbRow(t, lb.GetId()); row.State != "ready" {
		t.Fatalf("after the ready pass: state %s", row.State)
	}
	if got := e.eventTypes(t, lb.GetId()); len(got) != 2 || got[1] != lifecycle.EventLBReady {
		t.Errorf("events %v, want created then ready", got)
	}
	// The bounds: create 14 round trips (claim; the load balancer, its account, its pool's
	// instances and the globals waiting on it in one batch; the create-pending mark's fenced
	// transaction of five: BEGIN, lease check, row lock, the writes' batch, COMMIT; the budget
	// lease; the record's five; the requeue), ready 8 (claim; the reads' batch; the ready
	// write's five, its row, meter and event in one batch; the completion). Before the reads
	// and the writes went as batches they were 17 and 12 (every statement its own round trip).
	// The lease check is two statements in its one round trip (its lock, then its read:
	// store.CheckLease), so each fenced write sends one statement more than its round trips.
	for _, c := range []struct {
		what       string
		got, bound int
	}{
		{"create pass round trips", createTrips, 14}, {"create pass statements", createStmts, 19},
		{"ready pass round trips", readyTrips, 8}, {"ready pass statements", readyStmts, 14},
	} {
		if c.got > c.bound {
			t.Errorf("%s: %d, want at most %d", c.what, c.got, c.bound)
		}
	}
}
