package reconcile_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"better-compute.dev/compute/reconcile"
	"better-compute.dev/compute/store"
)

// TestSharesKeepASlowKindFromTheSlots: a kind whose handlers hang (a BMC that never answers)
// holds at most its share of the slots, and one group of it (a tenant) at most its bound, while
// another kind's items all run to the end and the other group's item starts. Nothing is
// timed: the hung handlers hold their slots until the test lets them go.
func TestSharesKeepASlowKindFromTheSlots(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	const slow, fast = "test.slow", "test.fast"
	release := make(chan struct{})
	var mu sync.Mutex
	running := map[string]int{} // slow handlers in flight per group
	maxRunning := map[string]int{}
	total, maxTotal := 0, 0
	started := map[string]bool{}
	slowH := reconcile.HandlerFunc(func(ctx context.Context, l store.Lease) (reconcile.Result, error) {
		group := l.ResourceID[:1]
		mu.Lock()
		running[group]++
		total++
		maxRunning[group] = max(maxRunning[group], running[group])
		maxTotal = max(maxTotal, total)
		started[l.ResourceID] = true
		mu.Unlock()
		defer func() {
			mu.Lock()
			running[group]--
			total--
			mu.Unlock()
		}()
		select {
		case <-release:
		case <-ctx.Done():
		}
		return reconcile.Result{}, nil
	})
	fastH := reconcile.HandlerFunc(func(ctx context.Context, l store.Lease) (reconcile.Result, error) {
		return reconcile.Result{}, writeResult(ctx, f.db, l)
	})
	r := f.runner("r1", nil, reconcile.Options{
		Handlers:    map[string]reconcile.Handler{slow: slowH, fast: fastH},
		Concurrency: 4, PollInterval: 10 * time.Millisecond,
		Shares: map[string]reconcile.Share{slow: {Slots: 2, PerGroup: 1}},
	})
	// The slow kind's items are due first: oldest-first alone would give them every slot. (Queued
	// in one transaction, every item would share now() as its due time, and the claim's order
	// among equals would be the engine's to choose.)
	older := time.Now().Add(-time.Minute)
	err := store.ExecuteTx(f.ctx, f.db, func(tx store.Tx) error {
		for _, id := range []string{"a1", "a2", "a3", "a4"} {
			if err := store.EnqueueGroup(f.ctx, tx, slow, id, "a", &older); err != nil {
				return err
			}
		}
		if err := store.EnqueueGroup(f.ctx, tx, slow, "b1", "b", &older); err != nil {
			return err
		}
		for i := range 20 {
			if err := store.Enqueue(f.ctx, tx, fast, fmt.Sprintf("f%02d", i), nil); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(f.ctx)
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	defer func() {
		stop()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()

	// Wait (bounded only against a broken runner) until every fast item ran and a1 and b1 started
	// (their handlers run on goroutines of their own, in no fixed order).
	deadline := time.Now().Add(time.Minute)
	for {
		var n int
		if err := f.db.Pool().QueryRow(f.ctx, `SELECT count(*) FROM results`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		a1, b1 := started["a1"], started["b1"]
		mu.Unlock()
		if n == 20 && a1 && b1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of 20 fast items ran, a1 started %v, b1 started %v, while the slow kind holds its slots", n, a1, b1)
		}
		time.Sleep(10 * time.Millisecond)
	}
	mu.Lock()
	if running["a"] != 1 || running["b"] != 1 || maxTotal != 2 || maxRunning["a"] != 1 {
		t.Errorf("slow handlers in flight a=%d b=%d (most at once: %d, of group a %d); want 1, 1, 2, 1",
			running["a"], running["b"], maxTotal, maxRunning["a"])
	}
	if started["a2"] || started["a3"] || started["a4"] {
		t.Errorf("a second item of group a started while its first still hung: %v", started)
	}
	mu.Unlock()
	// The hung handlers still hold their leases: the fast kind got through beside them.
	for _, id := range []string{"a1", "b1"} {
		if w, err := store.GetWorkItem(f.ctx, f.db, slow, id); err != nil || w.Holder != "r1" {
			t.Errorf("slow item %s: holder %q, err %v; want still held by r1", id, w.Holder, err)
		}
	}
	close(release)
}
