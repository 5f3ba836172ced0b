package store

import (
	"context"
	"fmt"
	"time"
)

// Retained names a kind of history that retention prunes: each has its own age rule, its own
// statements and its own periodic pass (so one replica at a time prunes it, on that pass's lease).
type Retained string

// The kinds of history kept for a while and then deleted. How long each is kept is the caller's
// (app.RetentionConfig); the rules below say which rows count as old.
const (
	// RetainedEvents: events (numbered) and event_inbox rows (not yet numbered) older than the
	// retention by created_at. A tenant's newest numbered event is kept, so its head cursor never
	// moves back.
	RetainedEvents Retained = "events"
	// RetainedIdempotency: idempotency records made longer ago than the retention (a record
	// replays for IdempotencyTTL; the retention must be at least that, which cmd/bc-server checks).
	RetainedIdempotency Retained = "idempotency"
	// RetainedWork: work items idle (nothing due, no holder) for longer than the retention. An
	// idle item's epoch fences stale holders, so the retention must be far longer than a lease.
	RetainedWork Retained = "work"
	// RetainedUsage: usage intervals closed (ended_at set) longer ago than the retention. An open
	// interval is still being billed and is never pruned, however old.
	RetainedUsage Retained = "usage"
)

// RetainedKinds lists every kind of retained history.
var RetainedKinds = []Retained{RetainedEvents, RetainedIdempotency, RetainedWork, RetainedUsage}

// PruneBatchParams deletes one bounded batch of old rows.
type PruneBatchParams struct {
	Kind Retained
	// Keep is how long rows are kept; older ones (by the kind's rule) are deleted.
	Keep time.Duration
	// Limit bounds the rows one statement deletes.
	Limit int
	Now   time.Time // zero: database clock
}

// The cut every prune statement compares with: $1 (now, NULL for the database clock) minus $2
// microseconds. $3 is the batch size.
const pruneCut = `(coalesce($1::timestamptz, now()) - $2::int8 * interval '1 microsecond')`

// pruneRule is one prune statement's parts: the table, its primary key, which rows are old
// (a condition on the cut), the indexed column the oldest are found by, and any further
// condition on the picked rows.
type pruneRule struct{ table, key, old, order, extra string }

// sql is the rule's statement. It picks its oldest rows through an index of migration 0075
// (ORDER BY the indexed column, LIMIT $3) and deletes them by primary key in the same statement,
// its own implicit transaction: the only locks it takes are on the rows it deletes, held for that
// one short statement. The outer WHERE repeats the rule, so a row that a concurrent transaction
// made young again (a work item queued again) is checked against its new version and kept; the
// repeat is wrapped in IS TRUE so that it is a filter on the rows found by key, never a second
// scan the planner might drive the delete from (on a table without statistics yet it would, and
// then read every old row once per picked one).
func (r pruneRule) sql() string {
	return `DELETE FROM ` + r.table + ` WHERE (` + r.old + `) IS TRUE AND (` + r.key + `) IN (
		SELECT ` + r.key + ` FROM ` + r.table + ` p WHERE ` + r.old + r.extra + ` ORDER BY ` + r.order + ` LIMIT $3)`
}

// pruneStatements are each kind's statements, run one after the other per batch.
var pruneStatements = map[Retained][]string{
	RetainedEvents: {
		pruneRule{table: "event_inbox", key: "tenant_id, id", old: "created_at < " + pruneCut, order: "created_at"}.sql(),
		// A tenant's newest numbered event stays: its head cursor never moves back.
		pruneRule{table: "events", key: "tenant_id, seq", old: "created_at < " + pruneCut, order: "created_at",
			extra: " AND EXISTS (SELECT 1 FROM events n WHERE n.tenant_id = p.tenant_id AND n.seq > p.seq)"}.sql(),
	},
	RetainedIdempotency: {
		pruneRule{table: "idempotency_keys", key: "tenant_id, operation, idem_key", old: "created_at < " + pruneCut, order: "created_at"}.sql(),
	},
	RetainedWork: {
		pruneRule{table: "work_items", key: "kind, resource_id", old: "due_at IS NULL AND lease_holder IS NULL AND updated_at < " + pruneCut, order: "updated_at"}.sql(),
	},
	RetainedUsage: {
		pruneRule{table: "usage_records", key: "id", old: "ended_at IS NOT NULL AND ended_at < " + pruneCut, order: "ended_at"}.sql(),
	},
}

// PruneBatch deletes at most Limit old rows per statement of the kind (one statement for most
// kinds; events prune the inbox and the numbered events) and reports how many went, and whether
// some statement deleted a full batch (more may be left). Each statement commits on its own.
func PruneBatch(ctx context.Context, q Querier, p PruneBatchParams) (deleted int64, full bool, err error) {
	stmts, ok := pruneStatements[p.Kind]
	switch {
	case !ok:
		return 0, false, fmt.Errorf("store: prune: no retained history %q", p.Kind)
	case p.Keep <= 0 || p.Limit <= 0:
		return 0, false, fmt.Errorf("store: prune %s: needs a positive retention and batch size", p.Kind)
	}
	for _, sql := range stmts {
		n, err := exec(ctx, q, sql, nowArg(p.Now), p.Keep.Microseconds(), p.Limit)
		if err != nil {
			return deleted, false, fmt.Errorf("store: prune %s: %w", p.Kind, err)
		}
		deleted += n
		full = full || n >= int64(p.Limit)
	}
	return deleted, full, nil
}
