package reconcile

import (
	"context"
	"fmt"
	"time"

	"better-compute.dev/compute/store"
)

// RefundStaleReservations is a periodic pass giving back the quota units of reservations older
// than lifetime: replicas of the previous version booked a create's unit before its transaction
// (store/quota_reservations.go), and one that died in between left the reservation behind.
func RefundStaleReservations(db *store.DB, lifetime time.Duration) Handler {
	return HandlerFunc(func(ctx context.Context, _ store.Lease) (Result, error) {
		for {
			n, err := store.RefundStaleReservations(ctx, db, lifetime, refundBatch)
			if err != nil {
				return Result{}, fmt.Errorf("reconcile: refund stale reservations: %w", err)
			}
			if n == 0 {
				return Result{}, nil
			}
		}
	})
}

// refundBatch bounds the reservations one refund statement gives back.
const refundBatch = 500
