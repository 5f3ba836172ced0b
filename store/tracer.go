package store

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// Tracer sees every round trip a pool opened by Open sends, in the store's own terms, so that
// what watches the database (OpenTelemetry spans, tests counting round trips) does not depend
// on the driver. A statement sent alone is one round trip (StatementStart, StatementEnd); a
// batch is one round trip carrying several statements (BatchStart, then BatchStatement for each
// answer read, then BatchEnd). Embed NoTracer to implement only what is needed.
type Tracer interface {
	// StatementStart is called before a statement is sent alone; the context it returns is the
	// one StatementEnd receives.
	StatementStart(ctx context.Context, sql string, args []any) context.Context
	// StatementEnd is called with the rows the statement touched (or returned) and its error.
	StatementEnd(ctx context.Context, rows int64, err error)
	// BatchStart is called before a batch is sent, with its statements' text in order; the
	// context it returns is the one BatchStatement and BatchEnd receive.
	BatchStart(ctx context.Context, statements []string) context.Context
	// BatchStatement is called as each statement's answer of the batch is read.
	BatchStatement(ctx context.Context, sql string, args []any, err error)
	// BatchEnd is called when the batch is closed, with the batch's own error.
	BatchEnd(ctx context.Context, err error)
}

// NoTracer does nothing; embedding it in a Tracer leaves out the calls it does not need.
type NoTracer struct{}

// StatementStart returns ctx.
func (NoTracer) StatementStart(ctx context.Context, _ string, _ []any) context.Context { return ctx }

// StatementEnd does nothing.
func (NoTracer) StatementEnd(context.Context, int64, error) {}

// BatchStart returns ctx.
func (NoTracer) BatchStart(ctx context.Context, _ []string) context.Context { return ctx }

// BatchStatement does nothing.
func (NoTracer) BatchStatement(context.Context, string, []any, error) {}

// BatchEnd does nothing.
func (NoTracer) BatchEnd(context.Context, error) {}

// driverTracer presents a Tracer to pgx.
type driverTracer struct{ t Tracer }

var (
	_ pgx.QueryTracer = driverTracer{}
	_ pgx.BatchTracer = driverTracer{}
)

func (d driverTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	return d.t.StatementStart(ctx, data.SQL, data.Args)
}

func (d driverTracer) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryEndData) {
	d.t.StatementEnd(ctx, data.CommandTag.RowsAffected(), data.Err)
}

func (d driverTracer) TraceBatchStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceBatchStartData) context.Context {
	var text []string
	if data.Batch != nil {
		text = make([]string, 0, len(data.Batch.QueuedQueries))
		for _, q := range data.Batch.QueuedQueries {
			text = append(text, q.SQL)
		}
	}
	return d.t.BatchStart(ctx, text)
}

func (d driverTracer) TraceBatchQuery(ctx context.Context, _ *pgx.Conn, data pgx.TraceBatchQueryData) {
	d.t.BatchStatement(ctx, data.SQL, data.Args, data.Err)
}

func (d driverTracer) TraceBatchEnd(ctx context.Context, _ *pgx.Conn, data pgx.TraceBatchEndData) {
	d.t.BatchEnd(ctx, data.Err)
}

// SQLState returns the SQLSTATE code of a database error ("" when err is not one): what may be
// said of a failed statement without quoting the server's message, which can carry row values.
func SQLState(err error) string { return sqlState(err) }
