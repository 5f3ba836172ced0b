package storetest

import (
	"context"
	"sync/atomic"

	"better-compute.dev/compute/store"
	"github.com/jackc/pgx/v5"
)

// RoundTrips is a pgx tracer counting what a connection sends: each statement (BEGIN and
// COMMIT included) is one round trip, a pgx.Batch is one. Install it with store.WithTracer.
// pgx's own liveness pings of idle connections are not traced by pgx and so are not counted.
// It also counts statements (each statement of a batch is one), the server's fixed per-statement
// cost.
type RoundTrips struct{ n, statements atomic.Int64 }

// Count returns the round trips so far.
func (r *RoundTrips) Count() int64 { return r.n.Load() }

// Statements returns the statements so far.
func (r *RoundTrips) Statements() int64 { return r.statements.Load() }

// TraceQueryStart counts a statement.
func (r *RoundTrips) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	if ctx.Value(inBatch{}) == nil && !store.IsHousekeeping(ctx) {
		r.n.Add(1)
		r.statements.Add(1)
	}
	return ctx
}

// TraceQueryEnd does nothing.
func (r *RoundTrips) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

type inBatch struct{}

// TraceBatchStart counts a batch once.
func (r *RoundTrips) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	r.n.Add(1)
	return context.WithValue(ctx, inBatch{}, true)
}

// TraceBatchQuery counts a statement of a batch (its round trip was counted).
func (r *RoundTrips) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {
	r.statements.Add(1)
}

// TraceBatchEnd does nothing.
func (r *RoundTrips) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}
