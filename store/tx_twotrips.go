package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// ExecuteTwoTrips runs a SERIALIZABLE transaction in two round trips, for the calls whose cost
// a replica a region away from its database pays in round trips (create, update, delete):
//
//  1. BEGIN and every statement whose answer decides (reads, and writes whose answer is read,
//     such as a quota booked), queued by reads into one batch;
//  2. decide looks at those answers (in Go, no database) and returns the writes, which are
//     sent with COMMIT as the second batch.
//
// Retries follow ExecuteTx: a lost serialization race runs reads and decide again on a fresh
// transaction, so both must have no effect outside it and must set every value they fill.
// decide's error rolls the transaction back (one more round trip, on the error path only).
// A connection fault while the second batch is out is ErrCommitUnknown: COMMIT may have run.
func ExecuteTwoTrips(ctx context.Context, db *DB, reads func(r *Reads), decide func() (*Writes, error)) error {
	return retrying(ctx, func(ctx context.Context) error { return runTwoTripsOnce(ctx, db, false, reads, decide) })
}

// ExecuteLockedTwoTrips is ExecuteTwoTrips for a transaction whose decisions rest on row locks
// instead of SERIALIZABLE's read tracking: a create that books its quota among its reads, an
// update or delete that reads its row FOR UPDATE first. On PostgreSQL it runs at READ COMMITTED
// and every read of Reads that decides locks its rows FOR SHARE (Reads.locked); on CockroachDB
// it is SERIALIZABLE like every other transaction. The argument for why a create keeps the
// seed's rules on both engines is in quota_booking.go, for an update and a delete in lockorder.go; a
// transaction of another shape must not use it.
func ExecuteLockedTwoTrips(ctx context.Context, db *DB, reads func(r *Reads), decide func() (*Writes, error)) error {
	return retrying(ctx, func(ctx context.Context) error { return runTwoTripsOnce(ctx, db, !db.cockroach, reads, decide) })
}

// runTwoTripsOnce is one attempt of ExecuteTwoTrips (locked false) or ExecuteLockedTwoTrips.
func runTwoTripsOnce(ctx context.Context, db *DB, locked bool, reads func(r *Reads), decide func() (*Writes, error)) (err error) {
	conn, err := db.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("store: acquire: %w", err)
	}
	// A connection left inside a transaction (a rollback that could not be sent) is closed by
	// the pool on release rather than reused.
	defer conn.Release()
	defer rollbackOnPanic(ctx, conn)
	r := Reads{locked: locked}
	if locked {
		r.exec(`BEGIN ISOLATION LEVEL READ COMMITTED`)
	} else {
		r.exec(`BEGIN ISOLATION LEVEL SERIALIZABLE`)
	}
	reads(&r)
	if err := r.send(ctx, conn); err != nil {
		rollbackConn(ctx, conn)
		return retryableDeadlock(err)
	}
	return finishTwoTrips(ctx, conn, &r, decide)
}

// finishTwoTrips decides on the answers of a transaction's first round trip r, which conn holds
// open, and sends the writes with COMMIT.
func finishTwoTrips(ctx context.Context, conn *pgxpool.Conn, r *Reads, decide func() (*Writes, error)) error {
	w, err := decide()
	if err == nil {
		err = r.untaken()
	}
	if err != nil {
		rollbackConn(ctx, conn)
		return retryableDeadlock(err)
	}
	if w == nil {
		w = &Writes{}
	}
	dry := w.dryRun
	w = w.fused(ctx)
	for _, it := range w.items {
		if it.clientCheck {
			rollbackConn(ctx, conn)
			return fmt.Errorf("store: %s is judged by the client and cannot ride with COMMIT", it.what)
		}
	}
	commit := len(w.items)
	if dry {
		w.add("rollback", nil, `ROLLBACK`)
	} else {
		w.add("commit", nil, `COMMIT`)
	}
	failed, err := w.send(ctx, conn)
	switch {
	case err == nil:
		return nil
	case dry && failed == commit:
		// The rehearsal's ROLLBACK failed: nothing was written either way.
		rollbackConn(ctx, conn)
		return retryableDeadlock(err)
	case dry && sqlState(err) == "" && isConnectionFault(err):
		// The connection broke: an open transaction that was never committed wrote nothing.
		return err
	case sqlState(err) == "" && isConnectionFault(err):
		// The batch carrying COMMIT went out and no answer came back: the outcome is unknown.
		return commitUnknown(fmt.Errorf("%w: %w", errAtCommit, err))
	case failed == commit:
		// The server answered COMMIT with an error (a serialization failure found at commit):
		// nothing was written, and ExecuteTwoTrips may run the whole transaction again.
		rollbackConn(ctx, conn)
		return retryableDeadlock(fmt.Errorf("%w: %w", errAtCommit, err))
	default:
		// A write before COMMIT failed: the server skipped the rest, COMMIT included.
		rollbackConn(ctx, conn)
		return retryableDeadlock(err)
	}
}

// rollbackOnPanic, deferred right after a connection is acquired, ends its open transaction
// when the code using it panics, and panics on (the pool would otherwise get the connection back
// inside the transaction).
func rollbackOnPanic(ctx context.Context, conn *pgxpool.Conn) {
	if p := recover(); p != nil {
		rollbackConn(ctx, conn)
		panic(p)
	}
}

// rollbackConn ends the open transaction of conn, if any. A failure leaves the connection
// inside it, and the pool closes it on release.
func rollbackConn(ctx context.Context, conn *pgxpool.Conn) {
	if conn.Conn().PgConn().TxStatus() != 'I' {
		_, _ = conn.Exec(context.WithoutCancel(ctx), `ROLLBACK`)
	}
}

// Reads collects the statements of ExecuteTwoTrips's first round trip. Each method fills the
// caller's values when the batch's answers arrive; a row that does not exist leaves its error
// value at ErrNotFound.
type Reads struct {
	batch pgx.Batch
	items []func(br pgx.BatchResults) error
	// locked: the reads run at READ COMMITTED (ExecuteLockedTwoTrips on PostgreSQL), where a
	// row read to decide must be locked FOR SHARE so that nobody changes it before COMMIT.
	locked bool
	// takes are the quota units the reads saw free, which the writes must take (BookQuota).
	takes []*QuotaBooking
}

// shared returns sql as a read that decides: locking its rows FOR SHARE in a locked
// transaction, unchanged in a SERIALIZABLE one (which tracks the read itself).
func (r *Reads) shared(plain, forShare string) string {
	if r.locked {
		return forShare
	}
	return plain
}

func (r *Reads) send(ctx context.Context, to batchSender) error {
	br := to.SendBatch(ctx, &r.batch)
	var first error
	for _, read := range r.items {
		if err := read(br); err != nil && first == nil {
			first = fmt.Errorf("store: reads: %w", TranslateError(err))
		}
	}
	// Close reports a failure of the batch itself (nothing left unread failed).
	if err := br.Close(); err != nil && first == nil {
		first = fmt.Errorf("store: reads: %w", TranslateError(err))
	}
	return first
}

// exec queues a statement whose answer is only its success.
func (r *Reads) exec(sql string, args ...any) {
	r.batch.Queue(sql, args...)
	r.items = append(r.items, func(br pgx.BatchResults) error { _, err := br.Exec(); return err })
}

// readOne queues a query of at most one row: *found is nil when it came, ErrNotFound when not.
func readOne[T any](r *Reads, scan func(pgx.Row) (T, error), out *T, found *error, sql string, args ...any) {
	r.batch.Queue(sql, args...)
	r.items = append(r.items, func(br pgx.BatchResults) error {
		v, err := scan(br.QueryRow())
		if errors.Is(err, pgx.ErrNoRows) {
			var zero T
			*out, *found = zero, ErrNotFound
			return nil
		}
		if err != nil {
			return err
		}
		*out, *found = v, nil
		return nil
	})
}

// readAll queues a query of any number of rows.
func readAll[T any](r *Reads, scan func(pgx.Row) (T, error), out *[]T, sql string, args ...any) {
	r.batch.Queue(sql, args...)
	r.items = append(r.items, func(br pgx.BatchResults) error {
		rows, err := br.Query()
		if err != nil {
			return err
		}
		defer rows.Close()
		var all []T
		for rows.Next() {
			v, err := scan(rows)
			if err != nil {
				return err
			}
			all = append(all, v)
		}
		if err := rows.Err(); err != nil {
			return err
		}
		*out = all
		return nil
	})
}

// readAffected queues a write whose answer is the number of rows it touched.
func readAffected(r *Reads, n *int64, sql string, args ...any) {
	r.batch.Queue(sql, args...)
	r.items = append(r.items, func(br pgx.BatchResults) error {
		tag, err := br.Exec()
		if err != nil {
			return err
		}
		*n = tag.RowsAffected()
		return nil
	})
}

// The target reads name their rows by one IN over a union rather than "id = ANY($1) OR id IN
// (...)": an OR across a subquery cannot be answered from the primary key, so the planner reads
// the whole table (test/explain).
