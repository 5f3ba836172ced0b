package reconcile_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"better-compute.dev/compute/reconcile"
	"better-compute.dev/compute/store"
)

// TestTakeoverFencesTheStaleHolder: replica a stalls past its lease; b takes the item over
// and finishes it; a's late result and outcome are refused.
func TestTakeoverFencesTheStaleHolder(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.enqueue("w1")
	started, resume := make(chan struct{}), make(chan struct{})
	var staleErr error
	a := f.runner("a", reconcile.HandlerFunc(func(ctx context.Context, l store.Lease) (reconcile.Result, error) {
		close(started)
		<-resume // paused: no renewals land within the test (RenewInterval below)
		staleErr = writeResult(ctx, f.db, l)
		return reconcile.Result{}, staleErr
	}), reconcile.Options{RenewInterval: 20 * time.Second})
	b := f.runner("b", reconcile.HandlerFunc(func(ctx context.Context, l store.Lease) (reconcile.Result, error) {
		return reconcile.Result{}, writeResult(ctx, f.db, l)
	}), reconcile.Options{})

	aDone := make(chan int)
	go func() { aDone <- f.runOnce(a) }()
	<-started
	f.clock.Advance(reconcile.DefaultLeaseTTL + time.Second)
	if n := f.runOnce(b); n != 1 {
		t.Fatalf("b ran %d items, want the expired one", n)
	}
	close(resume)
	<-aDone

	if !errors.Is(staleErr, store.ErrLeaseLost) {
		t.Errorf("stale holder's WriteResult: err = %v, want ErrLeaseLost", staleErr)
	}
	var holder string
	if err := f.db.Pool().QueryRow(f.ctx, `SELECT holder FROM results WHERE id = 'w1'`).Scan(&holder); err != nil {
		t.Fatal(err)
	}
	if holder != "b" {
		t.Errorf("result written by %q, want b", holder)
	}
	if w := f.item("w1"); w.DueAt != nil || w.Holder != "" || w.Attempts != 0 || w.LastError != "" {
		t.Errorf("item after b's success: %+v, want idle with no error", w)
	}
}

// TestLostRenewalCancelsTheHandler: when a renewal finds the epoch moved, the handler's
// context ends as a lost lease, and the runner writes nothing.
func TestLostRenewalCancelsTheHandler(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.enqueue("w1")
	started := make(chan struct{})
	var sawLost bool
	r := f.runner("a", reconcile.HandlerFunc(func(ctx context.Context, l store.Lease) (reconcile.Result, error) {
		close(started)
		<-ctx.Done()
		sawLost = reconcile.LeaseLost(ctx)
		return reconcile.Result{}, ctx.Err()
	}), reconcile.Options{RenewInterval: 10 * time.Millisecond})
	done := make(chan int)
	go func() { done <- f.runOnce(r) }()
	<-started
	// Another replica's claim, as the row sees it: the epoch moves on.
	if _, err := f.db.Pool().Exec(f.ctx, `UPDATE work_items SET epoch = epoch + 1, lease_holder = 'b' WHERE resource_id = 'w1'`); err != nil {
		t.Fatal(err)
	}
	<-done
	if !sawLost {
		t.Error("handler context did not end as a lost lease")
	}
	if w := f.item("w1"); w.Holder != "b" || w.Attempts != 0 || w.LastError != "" {
		t.Errorf("item after the lost lease: %+v, want b's lease untouched", w)
	}
}
