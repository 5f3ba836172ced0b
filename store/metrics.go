package store

import (
	"context"
	"fmt"
	"time"
)

// QueueStat is the state of one kind's work items, read for metrics.
type QueueStat struct {
	Kind string
	// Queued counts items with a due time (due now or later); idle items are not counted.
	Queued int64
	// Due counts the queued items whose due time has come.
	Due int64
	// Leased counts items under a live lease.
	Leased int64
	// OldestDue is how long the longest-waiting due item has been due (0 when none is).
	OldestDue time.Duration
}

// Only rows with a due time are read (the due_at index); idle rows are the bulk of the table.
const sqlQueueStats = `SELECT kind,
	count(*),
	count(*) FILTER (WHERE due_at <= now()),
	count(*) FILTER (WHERE lease_holder IS NOT NULL AND lease_expires_at > now()),
	coalesce(extract(epoch FROM now() - min(due_at) FILTER (WHERE due_at <= now()))::float8, 0)
FROM work_items WHERE due_at IS NOT NULL GROUP BY kind ORDER BY kind`

// QueueStats reads the work queue's depth and age per kind.
func QueueStats(ctx context.Context, db *DB) ([]QueueStat, error) {
	rows, err := db.pool.Query(ctx, sqlQueueStats)
	if err != nil {
		return nil, fmt.Errorf("store: queue stats: %w", TranslateError(err))
	}
	defer rows.Close()
	var out []QueueStat
	for rows.Next() {
		var s QueueStat
		var age float64
		if err := rows.Scan(&s.Kind, &s.Queued, &s.Due, &s.Leased, &age); err != nil {
			return nil, fmt.Errorf("store: queue stats: %w", TranslateError(err))
		}
		s.OldestDue = time.Duration(max(age, 0) * float64(time.Second))
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: queue stats: %w", TranslateError(err))
	}
	return out, nil
}

// EventBacklog is the events written but not yet numbered (the inbox a reader drains).
type EventBacklog struct {
	Count  int64
	Oldest time.Duration
}

const sqlEventBacklog = `SELECT count(*), coalesce(extract(epoch FROM now() - min(created_at))::float8, 0) FROM event_inbox`

// EventBacklogStat reads the size and age of the events inbox.
func EventBacklogStat(ctx context.Context, db *DB) (EventBacklog, error) {
	var b EventBacklog
	var age float64
	if err := db.pool.QueryRow(ctx, sqlEventBacklog).Scan(&b.Count, &age); err != nil {
		return b, fmt.Errorf("store: event backlog: %w", TranslateError(err))
	}
	b.Oldest = time.Duration(max(age, 0) * float64(time.Second))
	return b, nil
}

// BudgetStat is one shared provider request budget as last written.
type BudgetStat struct {
	// Key is the first 12 hex digits of the token's SHA-256: enough to tell budgets apart,
	// nothing to recover a token from.
	Key string
	// Tokens is what the bucket held after its last lease (it refills from then on).
	Tokens float64
	// Blocked is how much longer the provider said the budget is spent (0 when it is not).
	Blocked time.Duration
}

const sqlBudgetStats = `SELECT left(key, 12), tokens,
	greatest(extract(epoch FROM blocked_until - now())::float8, 0)
FROM provider_budgets ORDER BY key LIMIT 1000`

// BudgetStats reads the shared provider budgets.
func BudgetStats(ctx context.Context, db *DB) ([]BudgetStat, error) {
	rows, err := db.pool.Query(ctx, sqlBudgetStats)
	if err != nil {
		return nil, fmt.Errorf("store: budget stats: %w", TranslateError(err))
	}
	defer rows.Close()
	var out []BudgetStat
	for rows.Next() {
		var s BudgetStat
		var blocked float64
		if err := rows.Scan(&s.Key, &s.Tokens, &blocked); err != nil {
			return nil, fmt.Errorf("store: budget stats: %w", TranslateError(err))
		}
		s.Blocked = time.Duration(blocked * float64(time.Second))
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: budget stats: %w", TranslateError(err))
	}
	return out, nil
}
