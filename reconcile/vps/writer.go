package vps

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"better-compute.dev/compute/core"
	"better-compute.dev/compute/lifecycle"
	"better-compute.dev/compute/reconcile"
	"better-compute.dev/compute/reconcile/managed"
	"better-compute.dev/compute/store"
)

// writer is the transaction of one fenced write: every result a pass records goes through
// write, which checks the lease first (managed.Fence).
type writer struct {
	ctx context.Context
	tx  pgx.Tx
}

// write runs fn in the pass's lease-fenced SERIALIZABLE transaction. fn may run more than once
// (the transaction is retried on serialization failures): it must only touch the database.
func write(ctx context.Context, f *managed.Fence, fn func(w *writer) error) error {
	return f.Write(ctx, func(ctx context.Context, tx pgx.Tx) error {
		return fn(&writer{ctx: ctx, tx: tx})
	})
}

// enqueue queues the reconciler on another resource in the same transaction.
func (w *writer) enqueue(id string) error {
	return store.Enqueue(w.ctx, w.tx, core.ReconcileKind, id, nil)
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
