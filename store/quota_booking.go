package store

import (
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// A create books its quota inside its own transaction, a locked one (ExecuteLockedTwoTrips).
//
// Why the booking waits on a lock: a tenant's creates must share nothing hot but the quota row
// they book, and contend on it by waiting, not by aborting. On PostgreSQL a SERIALIZABLE
// transaction that waited for the row lock of a concurrent booking fails with 40001 once that
// booking commits, and reruns; at READ COMMITTED the waiting UPDATE re-reads the row as
// committed and re-checks used < quota_limit before it writes, so concurrent bookings never
// overbook and none aborts.
//
// Where it waits: on PostgreSQL the reads only see whether a unit is free (sqlQuotaRoom, no
// lock), and the unit is taken by the last write before COMMIT (Writes.TakeQuota), so a busy
// tenant's creates hold its quota row from that statement to COMMIT only, not across a round
// trip and the judging in Go. On CockroachDB the unit is taken by the transaction's first
// statement: a row read in the first trip and written in the second would make two concurrent
// creates fail each other's read refresh (40001), while a write lock taken first makes them
// queue, and the reads made after it was granted need no refresh that could fail.
//
// Why a create keeps the seed's rules at READ COMMITTED on PostgreSQL (CockroachDB runs the
// same create SERIALIZABLE, the only level it is given here). Every decision the create makes
// rests on one of three things, none of which needs SERIALIZABLE's read tracking:
//
//   - the quota: decided by the conditional UPDATE itself, on the newest committed row, held
//     locked until COMMIT; the unlocked read before it only refuses early (a unit it saw free
//     may be gone by the UPDATE, which then refuses). used counts live resources: it is
//     incremented in the transaction that inserts the resource, so both commit or neither
//     (no reservation rows to settle);
//   - rows the request names (the pool, its project, subnet, target instances and load
//     balancers, certificates): read FOR SHARE (Reads.shared). The read waits for a writer in
//     flight and returns the newest committed version, and no transaction can update or delete
//     the row until this one commits, so what was checked is still true at COMMIT - the
//     two-phase locking SERIALIZABLE would otherwise have emulated with its read tracking.
//     A row found missing only ever refuses the create, which writes nothing;
//   - what must not exist yet (a live idempotency record of the key, a live load balancer of
//     the name): enforced by unique indexes at the server (idempotency_keys_pkey,
//     load_balancers_live_name). A twin's insert waits for the first's COMMIT and then fails
//     with the constraint's name, and the caller answers as a replay or INVALID_INPUT. The
//     idempotency lookup is an optimisation of the replay, never its guard.

// QuotaBooking is the answer to BookQuota.
type QuotaBooking struct {
	// Booked: the unit is the transaction's (CockroachDB: taken by the reads), or was free when
	// read and is taken by Writes.TakeQuota (PostgreSQL), which refuses the transaction if a
	// concurrent create took it in between.
	Booked bool
	// QuotaRows counts the tenant's quota rows on the pool, any resource (a pool a tenant has
	// no quota on, and does not own, is not visible to it). CockroachDB counts them only when
	// the booking was refused; a booked unit proves one and reports 1.
	QuotaRows int64
	// take is the unit Writes.TakeQuota must take (PostgreSQL), nil when the reads took it.
	take *quotaTake
}

// quotaTake is a unit seen free by the reads of a locked transaction on PostgreSQL, to be taken
// by its writes.
type quotaTake struct {
	poolID, tenantID, resource string
	queued                     bool
}

// sqlBookQuotaCounted books one unit and counts the tenant's quota rows on the pool only when
// the booking was refused, the only case whose answer the count changes. The count is a scalar
// subquery in a CASE arm, which both engines evaluate only when the arm is taken.
const sqlBookQuotaCounted = `WITH booked AS (
	UPDATE quotas SET used = used + 1
	 WHERE pool_id = $1 AND tenant_id = $2 AND resource = $3 AND used < quota_limit
	RETURNING 1
), outcome AS (
	SELECT count(*) AS n FROM booked
)
SELECT o.n, CASE WHEN o.n > 0 THEN 1 ELSE (SELECT count(*) FROM quotas WHERE pool_id = $1 AND tenant_id = $2) END
  FROM outcome o`

// sqlQuotaRoom reads, without a lock, whether the quota has a unit free and how many quota rows
// the tenant has on the pool.
const sqlQuotaRoom = `SELECT coalesce(bool_or(resource = $3 AND used < quota_limit), false), count(*)
  FROM quotas WHERE pool_id = $1 AND tenant_id = $2`

// sqlTakeQuota takes one unit, or fails the statement (and so the transaction, and the COMMIT
// riding behind it) with division_by_zero when none is left: the only way to refuse from a
// batch that carries COMMIT, portable to both engines. Its UPDATE waits for a concurrent taker
// and re-checks used < quota_limit on the row as that one committed it.
const sqlTakeQuota = `WITH taken AS (
	UPDATE quotas SET used = used + 1
	 WHERE pool_id = $1 AND tenant_id = $2 AND resource = $3 AND used < quota_limit
	RETURNING 1
)
SELECT 1 / count(*) FROM taken`

// codeDivisionByZero is sqlTakeQuota's refusal.
const codeDivisionByZero = "22012"

// ErrQuotaRefused: Writes.TakeQuota found no unit left; the transaction was rolled back.
var ErrQuotaRefused = errors.New("store: no quota unit left")

// BookQuota queues the booking of one unit of (pool, tenant, resource) among a locked
// transaction's reads (ExecuteLockedTwoTrips). On PostgreSQL it reads whether a unit is free,
// and the transaction's writes must take it (Writes.TakeQuota, checked before COMMIT), so that
// the quota row is locked only from that statement to COMMIT. Elsewhere (CockroachDB, or a
// SERIALIZABLE ExecuteTwoTrips) it takes the unit at once, and a caller queues it first: a row
// read in the first trip and written in the second would make concurrent creates fail each
// other's read refresh, where a lock taken first makes them queue.
func (r *Reads) BookQuota(poolID, tenantID, resource string, out *QuotaBooking) {
	*out = QuotaBooking{}
	if !r.locked {
		r.batch.Queue(sqlBookQuotaCounted, poolID, tenantID, resource)
		r.items = append(r.items, func(br pgx.BatchResults) error {
			var booked int64
			if err := br.QueryRow().Scan(&booked, &out.QuotaRows); err != nil {
				return err
			}
			out.Booked = booked == 1
			return nil
		})
		return
	}
	out.take = &quotaTake{poolID: poolID, tenantID: tenantID, resource: resource}
	r.takes = append(r.takes, out)
	r.batch.Queue(sqlQuotaRoom, poolID, tenantID, resource)
	r.items = append(r.items, func(br pgx.BatchResults) error {
		return br.QueryRow().Scan(&out.Booked, &out.QuotaRows)
	})
}

// TakeQuota queues the taking of b's unit among the transaction's writes, when its reads only
// saw it free (PostgreSQL); it does nothing when they took it. Queue it last, so that the quota
// row's lock is held for the shortest time: from this statement to COMMIT. It is a statement of
// its own, never fused with the inserts before it (store/tx_fuse.go does not take it): fused, its
// lock would also be held while they and their foreign-key checks run, and a busy tenant's
// creates would queue on it longer (bench/creates; docs/benchmarks.md, "Creates"). A unit gone
// by then fails the transaction with ErrQuotaRefused.
func (w *Writes) TakeQuota(b *QuotaBooking) {
	if b.take == nil || !b.Booked {
		return
	}
	b.take.queued = true
	w.batch.Queue(sqlTakeQuota, b.take.poolID, b.take.tenantID, b.take.resource)
	w.items = append(w.items, writeItem{what: "quota " + b.take.resource, read: func(br pgx.BatchResults) error {
		_, err := br.Exec()
		if sqlState(err) == codeDivisionByZero {
			return ErrQuotaRefused
		}
		return err
	}})
}

// untaken reports a unit the reads saw free that the writes did not take: a create that would
// commit without its booking.
func (r *Reads) untaken() error {
	for _, b := range r.takes {
		if b.Booked && !b.take.queued {
			return fmt.Errorf("store: the %s unit seen free was not taken by the writes (Writes.TakeQuota)", b.take.resource)
		}
	}
	return nil
}

// forShare turns a read into a read that decides in a locked transaction (Reads.shared).
const forShare = ` FOR SHARE`
