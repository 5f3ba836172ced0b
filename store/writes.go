package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Writes collects the last writes of a transaction, those whose answers nothing after them needs
// (the event, the work item, the idempotency record), and sends them in one round trip: at tens
// of milliseconds between a replica and its database, a call costs its sequential round trips.
type Writes struct {
	batch  pgx.Batch
	checks []func(pgconn.CommandTag) error
	what   []string
}

func (w *Writes) add(what string, check func(pgconn.CommandTag) error, sql string, args ...any) {
	w.batch.Queue(sql, args...)
	w.checks = append(w.checks, check)
	w.what = append(w.what, what)
}

// Send runs the collected writes in tx, in order, in one round trip, and checks each answer.
func (w *Writes) Send(ctx context.Context, tx pgx.Tx) error {
	if w.batch.Len() == 0 {
		return nil
	}
	br := tx.SendBatch(ctx, &w.batch)
	var first error
	for i := range w.checks {
		tag, err := br.Exec()
		if err == nil && w.checks[i] != nil {
			err = w.checks[i](tag)
		}
		if err != nil && first == nil {
			first = fmt.Errorf("store: %s: %w", w.what[i], TranslateError(err))
		}
	}
	if err := br.Close(); err != nil && first == nil {
		first = fmt.Errorf("store: batch: %w", TranslateError(err))
	}
	return first
}

// AppendEvent queues AppendEvent's insert.
func (w *Writes) AppendEvent(e Event) error {
	data, err := eventData(e)
	if err != nil {
		return err
	}
	w.add("append event", nil, sqlAppendEvent, e.TenantID, e.ID, e.Type, e.ResourceID, data)
	return nil
}

// Enqueue queues Enqueue's upsert.
func (w *Writes) Enqueue(kind, resourceID string, dueAt *time.Time) {
	w.add("enqueue "+kind+"/"+resourceID, nil, sqlEnqueue, kind, resourceID, dueAt)
}

// PutIdempotency queues PutIdempotency's insert; a live record of the key makes Send fail with
// ErrConflict on idempotency_keys_pkey.
func (w *Writes) PutIdempotency(rec IdempotencyRecord) {
	w.add("idempotency record", idempotencyInserted, sqlPutIdempotency,
		rec.TenantID, rec.Operation, rec.Key, rec.RequestHash, rec.ResourceID, IdempotencyTTL.String())
}
