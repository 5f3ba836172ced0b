package store

import (
	"context"
	"fmt"
	"time"
)

// Quota reservations are what replicas of the previous version booked ahead of a create's
// transaction: a row per booked unit, deleted by the transaction that consumed it or by a refund
// that gave the unit back. Creates of this version book inside their own transaction instead
// (quota_booking.go) and write no reservation; during a rolling upgrade the replicas still running the
// previous version do, and one of them that dies between booking and commit leaves its
// reservation behind. RefundStaleReservations, run by the reconcilers' sweep, gives those back,
// so the table and the sweep stay until no replica of that version can run.

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

// ReservationLifetime is how old a reservation is before the sweeper gives it back: far longer
// than any request of the previous version lived (its create, finding the reservation taken,
// failed UNAVAILABLE and was retried by its caller with its idempotencyKey).
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
