package vps

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"better-compute.dev/compute/core"
	"better-compute.dev/compute/ids"
	"better-compute.dev/compute/reconcile"
	"better-compute.dev/compute/store"
)

// writer is the transaction of one fenced write: every result a pass records goes through
// Reconciler.write, which checks the lease first (reconcile.WriteResult).
type writer struct {
	ctx context.Context
	tx  pgx.Tx
}

// write runs fn in a lease-fenced SERIALIZABLE transaction. fn may run more than once (the
// transaction is retried on serialization failures): it must only touch the database.
func (r *Reconciler) write(ctx context.Context, lease store.Lease, fn func(w *writer) error) error {
	return reconcile.WriteResult(ctx, r.opts.DB, lease, func(tx pgx.Tx) error {
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

// event appends an event of the tenant to the outbox.
func (w *writer) event(tenantID, typ, resourceID string, data map[string]any) error {
	_, err := store.AppendEvent(w.ctx, w.tx, store.Event{
		TenantID: tenantID, ID: ids.New(ids.Event), Type: typ, ResourceID: resourceID, Data: data,
	})
	return err
}

// errRowChanged stops a write whose premise a concurrent request changed (a new spec, a
// delete): that request queued the resource again, so the next pass starts from the new row.
var errRowChanged = errors.New("vps: the row changed during the pass")

// settle turns the outcome of a write into the pass's outcome: a changed row is no failure.
func settle(err error) (reconcile.Result, error) {
	if errors.Is(err, errRowChanged) {
		return reconcile.Result{}, nil
	}
	return reconcile.Result{}, err
}

// requeueAfter is a pass that succeeded and asks to run again after d, unless its write
// failed.
func requeueAfter(err error, d time.Duration) (reconcile.Result, error) {
	if err != nil {
		return settle(err)
	}
	return reconcile.Result{RequeueAfter: d}, nil
}
