package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"better-compute.dev/compute/requestid"
)

// Writes collects the last writes of a transaction, those whose answers nothing after them needs
// (the event, the work item, the idempotency record), and sends them in one round trip: at tens
// of milliseconds between a replica and its database, a call costs its sequential round trips.
type Writes struct {
	// dryRun ends the transaction with ROLLBACK instead of COMMIT (DryRun).
	dryRun bool
	batch  pgx.Batch
	items  []writeItem
	// eventsWithoutRequest are the queued events whose request id is taken from the context
	// Send is given (the call's), as store.AppendEvent takes it from its own.
	eventsWithoutRequest []*pgx.QueuedQuery
}

// DryRun makes the writes a rehearsal: every statement runs, so each constraint, lock and quota
// guard answers as it would, and the transaction then ends with ROLLBACK, leaving nothing
// written. A validateOnly call's decision is the real call's, to the last check.
func (w *Writes) DryRun() { w.dryRun = true }

// writeItem is one queued statement: what names it in errors; read takes its answer (an Exec
// with an optional check of the command tag, or a row scanned into the caller's value).
type writeItem struct {
	what string
	read func(br pgx.BatchResults) error
	// clientCheck: the item's answer is judged here, not by the server (a command tag
	// checked), so a batch that carries COMMIT behind it cannot use it (ExecuteTwoTrips).
	clientCheck bool
	// row: the item's answer is a row (addRow), which a fused statement returns.
	row bool
}

func (w *Writes) add(what string, check func(pgconn.CommandTag) error, sql string, args ...any) {
	w.batch.Queue(sql, args...)
	w.items = append(w.items, writeItem{what: what, read: func(br pgx.BatchResults) error {
		tag, err := br.Exec()
		if err == nil && check != nil {
			err = check(tag)
		}
		return err
	}, clientCheck: check != nil})
}

// addRow queues a statement that returns one row (INSERT ... RETURNING), scanned by scan.
func (w *Writes) addRow(what string, scan func(pgx.Row) error, sql string, args ...any) {
	w.batch.Queue(sql, args...)
	w.items = append(w.items, writeItem{what: what, read: func(br pgx.BatchResults) error { return scan(br.QueryRow()) }, row: true})
}

// batchSender is what sends a batch: a transaction, or a connection inside an explicit
// BEGIN (ExecuteTwoTrips).
type batchSender interface {
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// Send runs the collected writes in tx, in order, in one round trip, and checks each answer.
func (w *Writes) Send(ctx context.Context, tx Tx) error {
	_, err := w.send(ctx, tx)
	return err
}

// send is Send on any sender; failed is the index of the first item that failed (-1: none, or
// the batch itself failed).
func (w *Writes) send(ctx context.Context, to batchSender) (failed int, err error) {
	failed = -1
	if w.batch.Len() == 0 {
		return failed, nil
	}
	w.fillRequestIDs(ctx)
	br := to.SendBatch(ctx, &w.batch)
	var first error
	for i, it := range w.items {
		if err := it.read(br); err != nil && first == nil {
			first = fmt.Errorf("store: %s: %w", it.what, TranslateError(err))
			failed = i
		}
	}
	if err := br.Close(); err != nil && first == nil {
		first = fmt.Errorf("store: batch: %w", TranslateError(err))
	}
	return failed, first
}

// fillRequestIDs gives the queued events that have none the request id of ctx.
func (w *Writes) fillRequestIDs(ctx context.Context) {
	for _, q := range w.eventsWithoutRequest {
		q.Arguments[appendEventRequestIDArg] = requestid.FromContext(ctx)
	}
	w.eventsWithoutRequest = nil
}
