package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Shared status lists (provider_lists, provider_observations): one replica lists an account's
// resources of a kind for every replica, at most once a poll interval, and records what the
// list showed; the others read it instead of sending requests of their own.

// sqlClaimProviderList takes the right to list when nobody holds it (next_at passed). The
// claim time, from the database clock, is the began_at the list will be recorded under.
const sqlClaimProviderList = `
INSERT INTO provider_lists AS l (account_id, kind, claimed_at, next_at)
VALUES ($1, $2, now(), now() + $3::float8 * interval '1 second')
ON CONFLICT (account_id, kind) DO UPDATE SET claimed_at = now(), next_at = now() + $3::float8 * interval '1 second'
WHERE l.next_at <= now()
RETURNING claimed_at`

// ClaimProviderList claims the account's list of kind for hold (the list's timeout). It
// reports the claim time, which the list must be recorded under, and false when another
// replica listed within the interval or is listing now.
func ClaimProviderList(ctx context.Context, db *DB, accountID, kind string, hold time.Duration) (time.Time, bool, error) {
	var began time.Time
	err := db.pool.QueryRow(ctx, sqlClaimProviderList, accountID, kind, hold.Seconds()).Scan(&began)
	if errors.Is(err, pgx.ErrNoRows) {
		return time.Time{}, false, nil
	}
	if err != nil {
		return time.Time{}, false, fmt.Errorf("store: claim provider list: %w", TranslateError(err))
	}
	return began, true, nil
}

// ReleaseProviderList gives up a claim whose list was not read (deferred, or failed): another
// claim may be taken after retry.
func ReleaseProviderList(ctx context.Context, db *DB, accountID, kind string, began time.Time, retry time.Duration) error {
	_, err := db.pool.Exec(ctx, `UPDATE provider_lists SET next_at = now() + $4::float8 * interval '1 second'
		WHERE account_id = $1 AND kind = $2 AND claimed_at = $3`, accountID, kind, began, retry.Seconds())
	if err != nil {
		return fmt.Errorf("store: release provider list: %w", TranslateError(err))
	}
	return nil
}

// Listed is one provider resource a list showed, in the caller's encoding.
type Listed struct {
	ProviderID string
	Body       []byte
}

// RecordProviderList records the list claimed at began: what it showed replaces what an
// earlier list showed (only the rows that differ are written), and the next claim is allowed
// after interval. A list older than the one recorded is dropped (false).
func RecordProviderList(ctx context.Context, db *DB, accountID, kind string, began time.Time, interval time.Duration, items []Listed) (bool, error) {
	recorded := false
	err := ExecuteTx(ctx, db, func(tx Tx) error {
		recorded = false
		var last time.Time
		if err := tx.QueryRow(ctx, `SELECT began_at FROM provider_lists WHERE account_id = $1 AND kind = $2 FOR UPDATE`,
			accountID, kind).Scan(&last); err != nil {
			return err
		}
		if !last.Before(began) {
			return nil
		}
		rows, err := tx.Query(ctx, `SELECT provider_id, digest FROM provider_observations WHERE account_id = $1 AND kind = $2`,
			accountID, kind)
		if err != nil {
			return err
		}
		stored := map[string][]byte{}
		for rows.Next() {
			var id string
			var sum []byte
			if err := rows.Scan(&id, &sum); err != nil {
				rows.Close()
				return err
			}
			stored[id] = sum
		}
		if err := rows.Err(); err != nil {
			return err
		}
		var ids []string
		var bodies, digests [][]byte
		for _, it := range items {
			sum := sha256.Sum256(it.Body)
			if s, had := stored[it.ProviderID]; !had || !bytes.Equal(s, sum[:]) {
				ids, bodies, digests = append(ids, it.ProviderID), append(bodies, it.Body), append(digests, sum[:])
			}
			delete(stored, it.ProviderID)
		}
		if len(ids) > 0 {
			if _, err := tx.Exec(ctx, `INSERT INTO provider_observations (account_id, kind, provider_id, body, digest)
				SELECT $1, $2, x.id, x.body, x.digest FROM unnest($3::text[], $4::bytea[], $5::bytea[]) AS x (id, body, digest)
				ON CONFLICT (account_id, kind, provider_id) DO UPDATE SET body = excluded.body, digest = excluded.digest`,
				accountID, kind, ids, bodies, digests); err != nil {
				return err
			}
		}
		if len(stored) > 0 {
			gone := make([]string, 0, len(stored))
			for id := range stored {
				gone = append(gone, id)
			}
			if _, err := tx.Exec(ctx, `DELETE FROM provider_observations WHERE account_id = $1 AND kind = $2 AND provider_id = ANY($3::text[])`,
				accountID, kind, gone); err != nil {
				return err
			}
		}
		if _, err := tx.Exec(ctx, `UPDATE provider_lists SET began_at = $3,
			next_at = CASE WHEN claimed_at = $3 THEN $3::timestamptz + $4::float8 * interval '1 second' ELSE next_at END
			WHERE account_id = $1 AND kind = $2`, accountID, kind, began, interval.Seconds()); err != nil {
			return err
		}
		recorded = true
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("store: record provider list: %w", TranslateError(err))
	}
	return recorded, nil
}

// ListedObservation is what the last recorded list of a kind says of one provider resource.
type ListedObservation struct {
	Began time.Time // when that list began; zero when none was recorded
	Age   time.Duration
	Body  []byte // nil when the list did not show it
}

// ProviderObservation reads what the last recorded list showed of providerID, in one round trip.
func ProviderObservation(ctx context.Context, db *DB, accountID, kind, providerID string) (ListedObservation, error) {
	var o ListedObservation
	var age float64
	err := db.pool.QueryRow(ctx, `SELECT l.began_at, extract(epoch FROM now() - l.began_at)::float8, o.body
		FROM provider_lists l LEFT JOIN provider_observations o
			ON o.account_id = l.account_id AND o.kind = l.kind AND o.provider_id = $3
		WHERE l.account_id = $1 AND l.kind = $2`, accountID, kind, providerID).Scan(&o.Began, &age, &o.Body)
	if errors.Is(err, pgx.ErrNoRows) {
		return ListedObservation{}, nil
	}
	if err != nil {
		return ListedObservation{}, fmt.Errorf("store: read provider observation: %w", TranslateError(err))
	}
	o.Age = time.Duration(age * float64(time.Second))
	return o, nil
}

// ListedLoadBalancer is what the last recorded list of an account's load balancers says of one
// load balancer row.
type ListedLoadBalancer struct {
	ID string
	// Speaks: the list began after the row was last written, so it may decide the row's next step.
	Speaks bool
	Body   []byte // nil when the list did not show the row's provider load balancer
	// CreatedAt is when the row was recorded.
	CreatedAt time.Time
}

// ListedLoadBalancers reads, for the given load balancer rows of the account, what the last
// recorded list (kind) showed of their provider load balancers, in one round trip.
func ListedLoadBalancers(ctx context.Context, db *DB, accountID, kind string, rowIDs []string) ([]ListedLoadBalancer, error) {
	rows, err := db.pool.Query(ctx, `SELECT lb.id, l.began_at > lb.updated_at, o.body, lb.created_at
		FROM load_balancers lb
		JOIN provider_lists l ON l.account_id = lb.account_id AND l.kind = $2
		LEFT JOIN provider_observations o ON o.account_id = lb.account_id AND o.kind = $2 AND o.provider_id = lb.provider_id
		WHERE lb.account_id = $1 AND lb.id = ANY($3::text[]) AND lb.provider_id <> ''`, accountID, kind, rowIDs)
	if err != nil {
		return nil, fmt.Errorf("store: read listed load balancers: %w", TranslateError(err))
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (ListedLoadBalancer, error) {
		var l ListedLoadBalancer
		err := r.Scan(&l.ID, &l.Speaks, &l.Body, &l.CreatedAt)
		return l, err
	})
	if err != nil {
		return nil, fmt.Errorf("store: read listed load balancers: %w", TranslateError(err))
	}
	return out, nil
}

// WaitingLoadBalancer is a load balancer row that waits on its provider load balancer.
type WaitingLoadBalancer struct {
	ID        string
	CreatedAt time.Time
}

// LoadBalancersWaitingOn returns the account's rows, pending or updating, whose provider load
// balancer is one of providerIDs and that were last written before began.
func LoadBalancersWaitingOn(ctx context.Context, db *DB, accountID string, providerIDs []string, began time.Time) ([]WaitingLoadBalancer, error) {
	rows, err := db.pool.Query(ctx, `SELECT id, created_at FROM load_balancers
		WHERE account_id = $1 AND provider_id = ANY($2::text[]) AND state IN ('pending', 'updating') AND updated_at < $3`,
		accountID, providerIDs, began)
	if err != nil {
		return nil, fmt.Errorf("store: read waiting load balancers: %w", TranslateError(err))
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (WaitingLoadBalancer, error) {
		var w WaitingLoadBalancer
		err := r.Scan(&w.ID, &w.CreatedAt)
		return w, err
	})
	if err != nil {
		return nil, fmt.Errorf("store: read waiting load balancers: %w", TranslateError(err))
	}
	return out, nil
}
