// Package reconciletest helps tests drive reconcile.Runners on a real database: a manual
// clock to move lease and due times without sleeping, and helpers that run a queue dry.
package reconciletest

import (
	"context"
	"sync"
	"testing"
	"time"

	"better-compute.dev/compute/contract"
	"better-compute.dev/compute/reconcile"
	"better-compute.dev/compute/store"
)

// Clock is a manual reconcile.Clock: it stands still until told to move.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock returns a clock showing start. Start it ahead of the database clock (for example
// time.Now().Add(time.Minute)) so that items enqueued with the database's now() are due.
func NewClock(start time.Time) *Clock {
	return &Clock{now: start.UTC().Truncate(time.Microsecond)}
}

// Now implements reconcile.Clock.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// maxDrainPasses stops a Drain that never ends (a handler that always requeues at once).
const maxDrainPasses = 10_000

// Drain runs r.RunOnce until a pass finds nothing due, and returns how many items ran. Items
// due later (retries, requeues) stay queued: advance the clock and Drain again.
func Drain(t testing.TB, ctx context.Context, r *reconcile.Runner) int {
	t.Helper()
	total := 0
	for range maxDrainPasses {
		n, err := r.RunOnce(ctx)
		if err != nil {
			t.Fatalf("reconciletest: run once: %v", err)
		}
		if n == 0 {
			return total
		}
		total += n
	}
	t.Fatalf("reconciletest: queue still busy after %d passes", maxDrainPasses)
	return total
}

// WaitDrained polls until no item of kinds is due at now (zero: the database clock), failing
// the test after timeout. It is for tests running Runner.Run in the background.
func WaitDrained(t testing.TB, ctx context.Context, db *store.DB, kinds []string, now func() time.Time, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		var at time.Time
		if now != nil {
			at = now()
		}
		n, err := store.CountDue(ctx, db, kinds, at)
		if err != nil {
			t.Fatalf("reconciletest: count due: %v", err)
		}
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("reconciletest: %d items of %v still due after %v", n, kinds, timeout)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("reconciletest: %v", ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// AssertQueued fails the test when a provider-side resource that is not resting has no due work
// item (the work-queue invariant, store/workqueue_unqueued.go), naming each one. Call it at the end of
// every test that runs reconcilers; apptest stacks running theirs call it at cleanup.
func AssertQueued(t testing.TB, ctx context.Context, db *store.DB) {
	t.Helper()
	for _, u := range Unqueued(t, ctx, db) {
		t.Errorf("reconciletest: %s %s is %s with no due work item (%s/%s)", u.Kind, u.ResourceID, u.State, u.WorkKind, u.WorkID)
	}
}

// Unqueued returns the resources that break the work-queue invariant now (at most 100 of each
// kind), for a test that checks it continuously.
func Unqueued(t testing.TB, ctx context.Context, db *store.DB) []store.Unqueued {
	t.Helper()
	found, err := store.FindAllUnqueued(ctx, db.Q(), contract.WorkKinds, 100)
	if err != nil {
		t.Fatalf("reconciletest: %v", err)
	}
	return found
}
