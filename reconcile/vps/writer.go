package vps

import (
	"context"
	"fmt"
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

// writeLB is a load balancer's fenced write in two round trips (store.ExecuteTwoTrips): BEGIN,
// the lease check and the row locked in one; decide's writes, sent with COMMIT, in the other.
// decide sees the row as it stands (cur) and may run more than once (serialization retries):
// it must only queue writes. An error from decide (errRowChanged, a lost lease) writes nothing.
func writeLB(ctx context.Context, f *managed.Fence, id string, decide func(cur store.LoadBalancer, w *store.Writes) error) error {
	var held, found error
	var cur store.LoadBalancer
	return store.ExecuteTwoTrips(ctx, f.DB, func(r *store.Reads) {
		r.CheckLease(f.Lease, &held)
		r.LoadBalancerForUpdate(id, &cur, &found)
	}, func() (*store.Writes, error) {
		if held != nil {
			return nil, held
		}
		if found != nil {
			return nil, fmt.Errorf("vps: load balancer %s: %w", id, found)
		}
		w := &store.Writes{}
		if err := decide(cur, w); err != nil {
			return nil, err
		}
		return w, nil
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
