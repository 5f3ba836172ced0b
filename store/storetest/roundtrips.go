package storetest

import (
	"context"
	"sync/atomic"

	"better-compute.dev/compute/store"
)

// RoundTrips is a store.Tracer counting what a connection sends: each statement (BEGIN and
// COMMIT included) is one round trip, a batch is one. Install it with store.WithTracer.
// pgx's own liveness pings of idle connections are not traced by pgx and so are not counted.
// It also counts statements (each statement of a batch is one), the server's fixed per-statement
// cost.
type RoundTrips struct {
	store.NoTracer
	n, statements atomic.Int64
}

// Count returns the round trips so far.
func (r *RoundTrips) Count() int64 { return r.n.Load() }

// Statements returns the statements so far.
func (r *RoundTrips) Statements() int64 { return r.statements.Load() }

// StatementStart counts a statement.
func (r *RoundTrips) StatementStart(ctx context.Context, _ string, _ []any) context.Context {
	if ctx.Value(inBatch{}) == nil && !store.IsHousekeeping(ctx) {
		r.n.Add(1)
		r.statements.Add(1)
	}
	return ctx
}

type inBatch struct{}

// BatchStart counts a batch once.
func (r *RoundTrips) BatchStart(ctx context.Context, _ []string) context.Context {
	r.n.Add(1)
	return context.WithValue(ctx, inBatch{}, true)
}

// BatchStatement counts a statement of a batch (its round trip was counted).
func (r *RoundTrips) BatchStatement(context.Context, string, []any, error) {
	r.statements.Add(1)
}
