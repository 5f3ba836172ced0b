package core

import (
	"context"

	"better-compute.dev/compute/store"
)

// Store is the database as the parts see it: lone reads on the pool (Q) and the transaction
// runners. The parts never hold the *store.DB, so what each of them does to the database is
// exactly the store functions it names, which test/repository checks against its allowlist.
type Store struct{ db *store.DB }

// Q is the pool as a Querier for reads outside a transaction.
func (s Store) Q() store.Querier { return s.db.Q() }

// ExecuteTx runs fn in a serializable transaction, retried on serialization failures
// (store.ExecuteTx).
func (s Store) ExecuteTx(ctx context.Context, fn func(tx store.Tx) error) error {
	return store.ExecuteTx(ctx, s.db, fn)
}

// ExecuteLockedTwoTrips runs a two-trip transaction whose reads lock what they read
// (store.ExecuteLockedTwoTrips).
func (s Store) ExecuteLockedTwoTrips(ctx context.Context, reads func(r *store.Reads), decide func() (*store.Writes, error)) error {
	return store.ExecuteLockedTwoTrips(ctx, s.db, reads, decide)
}

// AwaitIdempotencyTwin waits, in a locked transaction of its own, for a concurrent create with
// the same idempotency key to end (store.AwaitIdempotencyTwin).
func (s Store) AwaitIdempotencyTwin(ctx context.Context, tenantID, operation, key string) error {
	return store.AwaitIdempotencyTwin(ctx, s.db, tenantID, operation, key)
}

// ReadEventRanges reads the events of several tenants after their cursors in one batch on the
// pool (store.ReadEventRanges: the watch hub's read).
func (s Store) ReadEventRanges(ctx context.Context, ranges []store.EventRange, limit int) (store.EventFeed, error) {
	return store.ReadEventRanges(ctx, s.db, ranges, limit)
}
