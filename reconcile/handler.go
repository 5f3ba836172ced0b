// Package reconcile runs the reconcilers: every replica runs a Runner that claims due work
// items from the store's work queue under a lease, renews the lease while a Handler works
// (outside any transaction), and records the outcome: done, again later, or failed with
// backoff. Handlers write what they learn in a transaction fenced by store.CheckLease (see
// WriteResult), so a replica whose lease was taken over writes nothing.
package reconcile

import (
	"context"
	"errors"
	"time"

	"better-compute.dev/compute/store"
)

// Handler reconciles one resource of one kind. It is called with a live lease and a context
// that ends when the lease is lost (see LeaseLost) or the replica stops. It must be idempotent:
// after a crash or a lost lease another replica runs it again on the same resource.
//
// A nil error with a zero Result means the resource is converged; Result.RequeueAfter asks to
// run again later (for example to poll the provider until a load balancer is active). An error
// is retried: a RetryAtError at its time, a TransientError with backoff quietly, any other with
// backoff and its message shown as the resource's last error (errors.go). Terminal states (errored, failed) are the handler's to record; it then returns nil.
type Handler interface {
	Reconcile(ctx context.Context, lease store.Lease) (Result, error)
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, lease store.Lease) (Result, error)

// Reconcile calls f.
func (f HandlerFunc) Reconcile(ctx context.Context, lease store.Lease) (Result, error) {
	return f(ctx, lease)
}

// Result is a handler's verdict on a successful pass.
type Result struct {
	// RequeueAfter, when positive, keeps the item due that long from now.
	RequeueAfter time.Duration
}

// errStopping is the cause of a handler context ended by the replica shutting down.
var errStopping = errors.New("reconcile: runner stopping")

// LeaseLost reports whether ctx, a handler's context, ended because the lease was lost: the
// handler should stop and write nothing.
func LeaseLost(ctx context.Context) bool {
	return errors.Is(context.Cause(ctx), store.ErrLeaseLost)
}

// WriteResult runs fn in a SERIALIZABLE transaction (store.ExecuteTx) that first checks the
// lease is still held: the way a handler records what it learned. It returns an error
// matching store.ErrLeaseLost, having written nothing, when another replica took the lease.
func WriteResult(ctx context.Context, db *store.DB, lease store.Lease, fn func(tx store.Tx) error) error {
	return store.ExecuteTx(ctx, db, func(tx store.Tx) error {
		if err := store.CheckLease(ctx, tx, lease); err != nil {
			return err
		}
		return fn(tx)
	})
}

// WriteLocked is WriteResult for a write that decides only from rows it locks (FOR UPDATE)
// and otherwise writes blindly: store.ExecuteLockedTx, READ COMMITTED on PostgreSQL, which
// holds the lease through COMMIT as SERIALIZABLE does (store.ExecuteLockedTx says why).
func WriteLocked(ctx context.Context, db *store.DB, lease store.Lease, fn func(tx store.Tx) error) error {
	return store.ExecuteLockedTx(ctx, db, func(tx store.Tx) error {
		if err := store.CheckLease(ctx, tx, lease); err != nil {
			return err
		}
		return fn(tx)
	})
}
