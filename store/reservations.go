package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Quota reservations take a tenant's creates off its quota row's lock for all but one statement.
//
// Booking inside the create's SERIALIZABLE transaction made a busy tenant's creates abort one
// another: on PostgreSQL a SERIALIZABLE transaction that waited for the row lock of a concurrent
// booking fails with 40001 once that booking commits, and reruns. So a create books first, in a
// statement of its own (Reads.ReserveQuota, sent by ReadAhead outside any explicit
// transaction), and the create's transaction consumes what it booked (Reads.ConsumeReservation,
// the reservation row deleted in the same transaction that inserts the resource).
//
// Why the seed's quota rule still holds on both engines:
//   - The booking is one conditional UPDATE (used < quota_limit) and the reservation insert in
//     the same statement. On PostgreSQL it runs at the server's default READ COMMITTED: a booking
//     that waits for the row lock re-reads the row as committed and re-checks used <
//     quota_limit before it writes, so concurrent bookings never overbook, and none aborts. On
//     CockroachDB, where every transaction is SERIALIZABLE, it is an implicit single-statement
//     transaction, which the server itself reruns on contention. Either way the increment and
//     the reservation commit together or not at all.
//   - used therefore always counts live resources plus unconsumed reservations: a reservation
//     is deleted either by the transaction that inserts its resource (both commit or neither),
//     or by a refund, which gives the unit back in the same statement as the delete. Only one of
//     them can delete the row, so a unit is never consumed twice nor refunded twice.
//   - A refund is safe whatever happened to the create: after a commit it finds no row and does
//     nothing; while the create's COMMIT is still in flight it waits for the row lock and then
//     sees the outcome. So an unknown commit outcome is refunded the same way.
//   - A replica that dies between booking and commit leaves its reservation behind:
//     RefundStaleReservations (run by the reconcilers' sweep) gives back reservations older
//     than any request can live.

// QuotaReservation is the answer to ReserveQuota.
type QuotaReservation struct {
	ID string
	// Booked: a unit was taken and the reservation row exists.
	Booked bool
	// QuotaRows counts the tenant's quota rows on the pool, any resource (a pool a tenant has
	// no quota on, and does not own, is not visible to it). Counted only when the booking was
	// refused; a booked unit proves one and reports 1.
	QuotaRows int64
	// InFlight counts the other reservations of the same quota, not yet consumed or refunded,
	// when the booking was refused (0 when it was booked). A booking refused while some are in
	// flight may succeed once they settle: they become resources or are given back within a
	// request's time (see Settling).
	InFlight int64
}

// Settling reports a refused booking that should be tried again shortly: other reservations of
// the quota are in flight, and one of them may be refunded (or be an idempotent twin of this
// very request, which the caller then answers as a replay). Booked inside one transaction, the
// old way, such a booking waited for the row lock; this is that wait, taken outside.
func (q QuotaReservation) Settling() bool { return !q.Booked && q.InFlight > 0 }

// sqlReserveQuota counts the tenant's quota rows and the reservations in flight only when the
// booking was refused, the only case whose answer they change: a booking proves a quota row
// (reported as 1), and nobody waits on in-flight reservations once booked. Both counts are
// scalar subqueries in CASE arms, which both engines evaluate only when the arm is taken, so
// a booked create reads no index it does not write.
const sqlReserveQuota = `WITH booked AS (
	UPDATE quotas SET used = used + 1
	 WHERE pool_id = $1 AND tenant_id = $2 AND resource = $3 AND used < quota_limit
	RETURNING pool_id
), reserved AS (
	INSERT INTO quota_reservations (id, pool_id, tenant_id, resource) SELECT $4, pool_id, $2, $3 FROM booked
	RETURNING id
), outcome AS (
	SELECT count(*) AS n FROM reserved
)
SELECT CASE WHEN o.n > 0 THEN 1 ELSE (SELECT count(*) FROM quotas WHERE pool_id = $1 AND tenant_id = $2) END,
       CASE WHEN o.n > 0 THEN 0 ELSE (SELECT count(*) FROM quota_reservations WHERE pool_id = $1 AND tenant_id = $2 AND resource = $3) END,
       o.n
  FROM outcome o`

// ReserveQuota queues the booking of one unit of (pool, tenant, resource) under reservation id.
// Queue it in a read-ahead (ReadAhead, or ExecuteAheadTwoTrips's ahead), never among a
// transaction's reads: its whole point is to hold the quota row's lock for one statement only.
func (r *Reads) ReserveQuota(poolID, tenantID, resource, id string, out *QuotaReservation) {
	// The id is known before the answer: a transaction queued in the same round trip
	// (ExecuteAheadTwoTrips) consumes the reservation by it.
	*out = QuotaReservation{ID: id}
	r.batch.Queue(sqlReserveQuota, poolID, tenantID, resource, id)
	r.items = append(r.items, func(br pgx.BatchResults) error {
		var reserved int64
		if err := br.QueryRow().Scan(&out.QuotaRows, &out.InFlight, &reserved); err != nil {
			return err
		}
		out.ID, out.Booked = id, reserved == 1
		return nil
	})
}

// ConsumeReservation queues the delete of reservation id in a create's transaction: *consumed
// says whether it was still there (a reservation the sweeper refunded is gone, and the create
// must not go on without a unit).
func (r *Reads) ConsumeReservation(id string, consumed *bool) {
	r.batch.Queue(`DELETE FROM quota_reservations WHERE id = $1`, id)
	r.items = append(r.items, func(br pgx.BatchResults) error {
		tag, err := br.Exec()
		if err != nil {
			return err
		}
		*consumed = tag.RowsAffected() == 1
		return nil
	})
}

// sqlRefundReservations deletes the reservations chosen by the inner query and gives their
// units back, in one statement, so a unit comes back exactly once. quotas holds one row per
// (pool, tenant, resource), so one reservation decrements one row once.
const sqlRefundReservations = `WITH gone AS (
	DELETE FROM quota_reservations WHERE id IN (%s) RETURNING pool_id, tenant_id, resource
), units AS (
	SELECT pool_id, tenant_id, resource, count(*) AS n FROM gone GROUP BY pool_id, tenant_id, resource
)
UPDATE quotas SET used = greatest(quotas.used - units.n, 0)
  FROM units
 WHERE quotas.pool_id = units.pool_id AND quotas.tenant_id = units.tenant_id AND quotas.resource = units.resource`

// RefundReservation gives back the unit of reservation id when it was not consumed; it does
// nothing when the reservation's create committed or it was refunded already.
func RefundReservation(ctx context.Context, db *DB, id string) error {
	_, err := db.pool.Exec(ctx, fmt.Sprintf(sqlRefundReservations, `$1`), id)
	if err != nil {
		return fmt.Errorf("store: refund reservation: %w", TranslateError(err))
	}
	return nil
}

// ReservationLifetime bounds how long a create may hold a reservation before the sweeper gives
// it back: far longer than any request lives (a create consuming a reservation the sweeper took
// fails UNAVAILABLE and is retried by its caller with its idempotencyKey).
const ReservationLifetime = 10 * time.Minute

// RefundStaleReservations gives back the units of reservations older than olderThan (their
// replica died between booking and commit), at most limit of them per call, and reports how
// many quota rows it credited (0: none was stale).
func RefundStaleReservations(ctx context.Context, db *DB, olderThan time.Duration, limit int) (int64, error) {
	n, err := exec(ctx, db.pool, fmt.Sprintf(sqlRefundReservations,
		`SELECT id FROM quota_reservations WHERE created_at < now() - $1::INTERVAL ORDER BY created_at LIMIT $2`),
		olderThan.String(), limit)
	if err != nil {
		return 0, fmt.Errorf("store: refund stale reservations: %w", err)
	}
	return n, nil
}

// ReadAhead sends reads (and ReserveQuota bookings) in one round trip outside any explicit
// transaction: each statement commits on its own, at the server's default isolation (see
// above). A lost serialization race (CockroachDB, or a server whose default is SERIALIZABLE)
// or a connection fault before the answers came reruns the batch; the statements it holds
// must be safe to run again. reads is called once per attempt and must name a fresh
// reservation id each time: a booking that did commit and whose answer was lost keeps its id,
// and the sweeper gives its unit back.
func ReadAhead(ctx context.Context, db *DB, reads func(r *Reads)) error {
	return retrying(ctx, func(ctx context.Context) error {
		var r Reads
		if !db.cockroach {
			r.commitAsync()
		}
		reads(&r)
		return r.send(ctx, db.pool)
	})
}

// commitAsync queues what makes the read-ahead's own commit not wait for its WAL to reach disk.
// That is safe because nothing durable depends on it alone: a create's own transaction commits
// synchronously after it, and PostgreSQL flushes WAL in order, so once that commit is durable
// the booking before it is too. A crash in between loses a booking whose create never
// committed, which is what a refund would have done. It saves a create one of its two disk
// flushes. The setting is local to the read-ahead's transaction. (PostgreSQL only: CockroachDB
// has no such setting; its commits are replicated, not flushed locally.)
func (r *Reads) commitAsync() { r.exec(`SELECT set_config('synchronous_commit', 'off', true)`) }

// ExecuteAheadTwoTrips is ReadAhead(ahead) followed, when proceed says so, by
// ExecuteTwoTrips(reads, decide), in two round trips instead of three where the engine allows.
//
// On PostgreSQL the first round trip carries both the read-ahead and the transaction's reads:
// ahead's statements, then COMMIT (which ends the batch's implicit transaction, so the booking
// commits and releases the quota row exactly as a batch of its own would), then BEGIN
// ISOLATION LEVEL SERIALIZABLE and reads' statements, which stay open in that transaction. The
// server runs them in this order on one connection, so the transaction's reads see the
// booking committed. What can go wrong keeps ReadAhead's and ExecuteTwoTrips's meaning:
//   - a failure before the COMMIT (or a connection fault while the batch was out) rolls the
//     whole batch back, or leaves a booking the sweeper gives back, and the batch is sent
//     again with fresh reservation ids, as ReadAhead would;
//   - once the read-ahead committed, the transaction is the only thing run again: a failed read,
//     a decide that asks for a rerun, or a serialization failure at COMMIT continue with
//     ExecuteTwoTrips(reads, decide) from a fresh transaction;
//   - proceed false (a replay, a booking that should wait for in-flight ones to settle) rolls
//     the open transaction back and reports ran false: the caller acts on ahead's answers.
//
// ran reports whether the transaction was attempted (its error, if any, is err). On
// CockroachDB, which ends a batch's implicit transaction only at its end, the two phases go as
// two calls, three round trips.
func ExecuteAheadTwoTrips(ctx context.Context, db *DB, ahead func(r *Reads), proceed func() bool,
	reads func(r *Reads), decide func() (*Writes, error)) (ran bool, err error) {
	if db.cockroach {
		if err := ReadAhead(ctx, db, ahead); err != nil {
			return false, err
		}
		if !proceed() {
			return false, nil
		}
		return true, ExecuteTwoTrips(ctx, db, reads, decide)
	}
	// open is the transaction the first round trip left open; nil once the read-ahead committed
	// but the transaction's reads failed, so that the transaction must start afresh.
	var open *pgxpool.Conn
	err = retrying(ctx, func(ctx context.Context) error {
		// Queued before a connection is taken: ahead and reads run no statement themselves.
		var r Reads
		ahead(&r)
		r.commitAsync()
		r.exec(`COMMIT`)
		r.exec(`BEGIN ISOLATION LEVEL SERIALIZABLE`)
		split := len(r.items)
		reads(&r)
		conn, err := db.pool.Acquire(ctx)
		if err != nil {
			return fmt.Errorf("store: acquire: %w", err)
		}
		before, after := r.sendSplit(ctx, conn, split)
		if before != nil || after != nil {
			rollbackConn(ctx, conn)
			conn.Release()
			return before // nil: the read-ahead committed, and only the transaction goes again
		}
		open = conn
		return nil
	})
	switch {
	case err != nil:
		return false, err
	case !proceed():
		if open != nil {
			rollbackConn(ctx, open)
			open.Release()
		}
		return false, nil
	case open == nil:
		return true, ExecuteTwoTrips(ctx, db, reads, decide)
	}
	err = finishAhead(ctx, open, decide)
	if IsRetryable(err) {
		return true, ExecuteTwoTrips(ctx, db, reads, decide)
	}
	return true, TranslateError(err)
}

// finishAhead is finishTwoTrips on the transaction ExecuteAheadTwoTrips opened, releasing its
// connection whatever happens (a panic in decide included, after a rollback).
func finishAhead(ctx context.Context, conn *pgxpool.Conn, decide func() (*Writes, error)) error {
	defer conn.Release()
	defer rollbackOnPanic(ctx, conn)
	return finishTwoTrips(ctx, conn, decide)
}
