package vps

import (
	"context"
	"fmt"
	"time"

	"better-compute.dev/compute/contract"
	"better-compute.dev/compute/lifecycle"
	"better-compute.dev/compute/reconcile"
	"better-compute.dev/compute/reconcile/managed"
	"better-compute.dev/compute/store"
)

// writer is the transaction of one fenced write: every result a pass records goes through
// write, which checks the lease first (managed.Fence). Every write here first locks the row
// it decides from (Get...ForUpdate) and compares it with the row the pass read; the rest are
// blind writes (state of the locked row, quota refunds, meters, events, queued work) and reads
// of waiters whose misses their own dependency polls repair. That is the shape
// store.ExecuteLockedTx requires, so these fences are RowLocked (READ COMMITTED on PostgreSQL):
// keep it so when adding a write.
type writer struct {
	ctx context.Context
	tx  store.Tx
}

// write runs fn in the pass's lease-fenced transaction. fn may run more than once
// (the transaction is retried on serialization failures): it must only touch the database.
func write(ctx context.Context, f *managed.Fence, fn func(w *writer) error) error {
	return f.Write(ctx, func(ctx context.Context, tx store.Tx) error {
		return fn(&writer{ctx: ctx, tx: tx})
	})
}

// writeLB is a load balancer's fenced write (managed.Fence.Write): the lease checked, the row
// locked and read, then decide's writes sent as one batch before COMMIT. decide sees the row as
// it stands (cur) and may run more than once (serialization retries): it must only queue
// writes. An error from decide (errRowChanged) writes nothing. The lease check, the lock and
// COMMIT keep round trips of their own: sending the writes with COMMIT as well
// (store.ExecuteTwoTrips) made more serialization reruns on PostgreSQL and a slower
// convergence (docs/benchmarks.md, "Converge").
func writeLB(ctx context.Context, f *managed.Fence, id string, decide func(cur store.LoadBalancer, w *store.Writes) error) error {
	return f.Write(ctx, func(ctx context.Context, tx store.Tx) error {
		cur, err := store.GetLoadBalancerForUpdate(ctx, tx, id)
		if err != nil {
			return fmt.Errorf("vps: load balancer %s: %w", id, err)
		}
		w := &store.Writes{}
		if err := decide(cur, w); err != nil {
			return err
		}
		return w.Send(ctx, tx)
	})
}

// enqueue queues the reconciler on another resource in the same transaction.
func (w *writer) enqueue(id string) error {
	return store.Enqueue(w.ctx, w.tx, contract.VPSKind, id, nil)
}

// enqueueAll queues every id.
func (w *writer) enqueueAll(resourceIDs []string) error {
	for _, id := range resourceIDs {
		if err := w.enqueue(id); err != nil {
			return err
		}
	}
	return nil
}

// errRowChanged stops a write whose premise a concurrent request changed (managed.ErrRowChanged).
var errRowChanged = managed.ErrRowChanged

// requeueAfter is a pass that succeeded and asks to run again after d, unless its write
// failed (the loop ends a pass whose write met a changed row quietly).
func requeueAfter(err error, d time.Duration) (reconcile.Result, error) {
	if err != nil {
		return reconcile.Result{}, err
	}
	return reconcile.Result{RequeueAfter: d}, nil
}

// lb records what lifecycle transition t of a load balancer does (its quota, meter and event).
func (w *writer) lb(t lifecycle.Transition, cur store.LoadBalancer, data map[string]any) error {
	return lifecycle.LoadBalancer.Apply(w.ctx, w.tx, t, lifecycle.Subject{TenantID: cur.TenantID, PoolID: cur.PoolID, ID: cur.ID}, data)
}
