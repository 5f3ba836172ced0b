package store

import (
	"context"
	"fmt"
	"time"
)

// BudgetLease is what one TakeBudget statement granted.
type BudgetLease struct {
	// Granted is how many requests the caller may send now (0 when the bucket is short).
	Granted int
	// Left is what the bucket holds after the grant.
	Left float64
	// BlockedUntil is when the provider said the budget returns (in the past when it did not).
	BlockedUntil time.Time
}

// BudgetParams describe one token's bucket and the lease asked of it.
type BudgetParams struct {
	Key       string  // SHA-256 of the token, hex
	Capacity  float64 // the bucket's size (the burst)
	PerSecond float64 // refill rate
	Want      int     // requests wanted now
	Reserve   float64 // leave at least this much in the bucket (low-priority callers)
}

// sqlTakeBudget refills the bucket from the database clock and takes up to $4 tokens while
// leaving $5 behind, all in one statement: the first use of a key inserts a full bucket, and a
// concurrent taker waits on the row for the length of one statement only. The refill is
// computed from the later of refilled_at and now(), so transactions whose start times commit
// out of order never refill twice.
const sqlTakeBudget = `
INSERT INTO provider_budgets AS b (key, tokens, refilled_at, granted)
VALUES ($1, $2::float8 - least($4::int8, greatest(floor($2::float8 - $5::float8), 0)::int8),
	now(), least($4::int8, greatest(floor($2::float8 - $5::float8), 0)::int8))
ON CONFLICT (key) DO UPDATE SET
	tokens = least($2::float8, b.tokens + $3::float8 * greatest(extract(epoch FROM now() - b.refilled_at)::float8, 0))
		- (CASE WHEN now() < b.blocked_until THEN 0 ELSE least($4::int8, greatest(floor(
			least($2::float8, b.tokens + $3::float8 * greatest(extract(epoch FROM now() - b.refilled_at)::float8, 0)) - $5::float8), 0)::int8) END),
	granted = (CASE WHEN now() < b.blocked_until THEN 0 ELSE least($4::int8, greatest(floor(
			least($2::float8, b.tokens + $3::float8 * greatest(extract(epoch FROM now() - b.refilled_at)::float8, 0)) - $5::float8), 0)::int8) END),
	refilled_at = greatest(b.refilled_at, now())
RETURNING granted, tokens, blocked_until`

// TakeBudget leases up to p.Want requests from the token's shared bucket in one round trip.
func TakeBudget(ctx context.Context, db *DB, p BudgetParams) (BudgetLease, error) {
	var l BudgetLease
	var granted int64
	err := db.pool.QueryRow(ctx, sqlTakeBudget, p.Key, p.Capacity, p.PerSecond, p.Want, p.Reserve).
		Scan(&granted, &l.Left, &l.BlockedUntil)
	if err != nil {
		return BudgetLease{}, fmt.Errorf("store: take provider budget: %w", TranslateError(err))
	}
	l.Granted = int(granted)
	return l, nil
}

// BlockBudget records that the provider refused the token's requests until until, so every
// replica stops drawing on it, not only the one that was told.
func BlockBudget(ctx context.Context, db *DB, key string, until time.Time) error {
	_, err := db.pool.Exec(ctx, `UPDATE provider_budgets SET blocked_until = greatest(blocked_until, $2) WHERE key = $1`, key, until)
	if err != nil {
		return fmt.Errorf("store: block provider budget: %w", TranslateError(err))
	}
	return nil
}
