package storetest

import (
	"context"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
)

// RoundTrips is a pgx tracer counting what a connection sends: each statement (BEGIN and
// COMMIT included) is one round trip, a pgx.Batch is one. Install it with store.WithTracer.
// pgx's own liveness pings of idle connections are not traced by pgx and so are not counted.
type RoundTrips struct{ n atomic.Int64 }

// Count returns the round trips so far.
func (r *RoundTrips) Count() int64 { return r.n.Load() }

// TraceQueryStart counts a statement.
func (r *RoundTrips) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	if ctx.Value(inBatch{}) == nil {
		r.n.Add(1)
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

// TraceBatchQuery does nothing: the batch was counted.
func (r *RoundTrips) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}

// TraceBatchEnd does nothing.
func (r *RoundTrips) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}
