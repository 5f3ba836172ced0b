package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"better-compute.dev/compute/observe"
)

// The work queue: one row per (kind, resource id) in work_items. A request records its change
// and calls Enqueue in the same transaction; reconciler replicas Claim due rows under a lease,
// work outside any transaction, and write their results in a transaction that first calls
// CheckLease. Every write of a holder is fenced on the lease epoch (a compare-and-set): row
// locks are best-effort on CockroachDB, so the epoch is what keeps a paused holder whose lease
// was taken over from writing anything.
//
// The queue keeps one invariant (store/workqueue_unqueued.go): every provider-side resource that is not
// resting has a due item. An item goes idle only through Complete when nobody queued it during
// the pass, so a pass that leaves its resource unsettled must requeue it or queue it in its
// fenced write.
//
// Time-dependent statements take an optional now (zero means the database clock), so tests
// move time without sleeping.

// PeriodicResourceID is the resource id of the singleton row of a periodic pass.
const PeriodicResourceID = "periodic"

// maxLastErrorBytes bounds the stored last_error: it is shown to tenants, not a log.
const maxLastErrorBytes = 2048

// Lease is a claimed work item: the holder may work on the resource until ExpiresAt (renewing
// extends it), and every write it makes is fenced on Epoch.
type Lease struct {
	// Kind is the reconciler kind, for example "vps.provider-resources".
	Kind string
	// ResourceID is the resource the item is about (PeriodicResourceID for a periodic pass).
	ResourceID string
	// Epoch is the claim's term: it grew by one when this lease was granted.
	Epoch int64
	// Generation is the enqueue count when claimed; a later Enqueue makes the item run again.
	Generation int64
	// Attempts is the number of consecutive failed attempts before this one.
	Attempts int
	// Holder is the replica holding the lease.
	Holder string
	// ExpiresAt is when the lease lapses unless renewed (database clock, or the injected now).
	ExpiresAt time.Time
}

// WorkItem is a work row as stored, for status pages and tests.
type WorkItem struct {
	Kind           string
	ResourceID     string
	DueAt          *time.Time // nil: idle
	Holder         string     // "": free
	LeaseExpiresAt *time.Time
	Epoch          int64
	Generation     int64
	Attempts       int
	LastError      string
	CreatedAt      time.Time
	UpdatedAt      time.Time
}

const sqlEnqueue = `INSERT INTO work_items (kind, resource_id, due_at, generation, created_at, updated_at)
VALUES ($1, $2, coalesce($3::timestamptz, now()), 1, now(), now())
ON CONFLICT (kind, resource_id) DO UPDATE SET
	due_at = CASE WHEN work_items.due_at IS NULL OR excluded.due_at < work_items.due_at
		THEN excluded.due_at ELSE work_items.due_at END,
	generation = work_items.generation + 1,
	updated_at = now()`

// sqlEnqueueNew is sqlEnqueue's insert arm alone, due now (Writes.EnqueueNew).
const sqlEnqueueNew = `INSERT INTO work_items (kind, resource_id, due_at, generation, created_at, updated_at)
VALUES ($1, $2, now(), 1, now(), now())`

// Enqueue asks for kind's reconciler to run on resourceID at dueAt (nil: now), inside tx, the
// transaction that records the change. An item already queued keeps the earlier due time and
// its generation grows, so a replica working on it now will run it once more afterwards.
func Enqueue(ctx context.Context, tx Tx, kind, resourceID string, dueAt *time.Time) error {
	if _, err := tx.Exec(ctx, sqlEnqueue, kind, resourceID, dueAt); err != nil {
		return fmt.Errorf("store: enqueue %s/%s: %w", kind, resourceID, TranslateError(err))
	}
	return nil
}

const sqlEnqueueGroup = `INSERT INTO work_items (kind, resource_id, due_at, generation, fair_group, created_at, updated_at)
VALUES ($1, $2, coalesce($3::timestamptz, now()), 1, $4, now(), now())
ON CONFLICT (kind, resource_id) DO UPDATE SET
	due_at = CASE WHEN work_items.due_at IS NULL OR excluded.due_at < work_items.due_at
		THEN excluded.due_at ELSE work_items.due_at END,
	generation = work_items.generation + 1,
	fair_group = excluded.fair_group,
	updated_at = now()`

// EnqueueGroup is Enqueue for work that belongs to a fairness group (the tenant, for metal
// nodes): claims bound how many items of one group a runner holds at once (ClaimParams).
func EnqueueGroup(ctx context.Context, tx Tx, kind, resourceID, group string, dueAt *time.Time) error {
	if _, err := tx.Exec(ctx, sqlEnqueueGroup, kind, resourceID, dueAt, group); err != nil {
		return fmt.Errorf("store: enqueue %s/%s: %w", kind, resourceID, TranslateError(err))
	}
	return nil
}

// ClaimParams selects and leases due work.
type ClaimParams struct {
	// Holder names the claiming replica; it is stored on the rows.
	Holder string
	// Kinds are the kinds the caller has handlers for.
	Kinds []string
	// Limit is the most rows to claim.
	Limit int
	// KindLimits bounds the rows claimed per kind (a kind absent: Limit; 0 or less: none), so
	// that one kind's backlog cannot take every free slot of the caller.
	KindLimits map[string]int
	// GroupLimits bounds, per kind, how many items of one fairness group (EnqueueGroup) the
	// holder may hold at once, the items it holds already included (a kind absent or 0: no
	// bound). Items of a group at its bound are skipped, so the next group's get the slots.
	GroupLimits map[string]int
	// LeaseTTL is how long the lease lasts without renewal.
	LeaseTTL time.Duration
	// Now overrides the database clock (tests); zero means now().
	Now time.Time
}

// The claim, fair by kind and by group. lim has each kind's room and group bound. A kind
// without a group bound takes its room of due rows, oldest first, through the due_at index
// (plain). A kind with one (metal: a few rows) is ranked in full: held counts the items of each
// (kind, group) this holder holds unexpired; open ranks the free due items within their group
// after those; fair ranks, per kind, the ones within their group's bound; bounded locks those
// within the kind's room. Rows another claimer has locked are skipped; the locking CTEs are
// materialised on both engines, so the final LIMIT bounds the claim exactly.
const sqlClaim = `WITH lim AS (
	SELECT * FROM unnest($1::text[], $6::int8[], $7::int8[]) AS l(kind, kind_room, group_cap)
), plain AS (
	SELECT c.* FROM lim CROSS JOIN LATERAL (
		SELECT w.kind, w.resource_id, w.due_at, w.lease_holder IS NOT NULL AS lapsed FROM work_items AS w
		WHERE w.kind = lim.kind AND lim.group_cap <= 0
			AND w.due_at <= coalesce($2::timestamptz, now())
			AND (w.lease_expires_at IS NULL OR w.lease_expires_at <= coalesce($2::timestamptz, now()))
		ORDER BY w.due_at
		LIMIT lim.kind_room
		FOR UPDATE SKIP LOCKED
	) AS c
), held AS (
	SELECT w.kind, w.fair_group, count(*) AS n FROM work_items AS w JOIN lim ON lim.kind = w.kind
	WHERE lim.group_cap > 0 AND w.lease_holder = $4 AND w.lease_expires_at > coalesce($2::timestamptz, now())
	GROUP BY w.kind, w.fair_group
), open AS (
	SELECT w.kind, w.resource_id, w.due_at, lim.kind_room, lim.group_cap,
		coalesce(held.n, 0) + row_number() OVER (PARTITION BY w.kind, w.fair_group ORDER BY w.due_at, w.resource_id) AS group_n
	FROM work_items AS w JOIN lim ON lim.kind = w.kind
	LEFT JOIN held ON held.kind = w.kind AND held.fair_group = w.fair_group
	WHERE lim.group_cap > 0 AND w.due_at <= coalesce($2::timestamptz, now())
		AND (w.lease_expires_at IS NULL OR w.lease_expires_at <= coalesce($2::timestamptz, now()))
), fair AS (
	SELECT kind, resource_id, kind_room, row_number() OVER (PARTITION BY kind ORDER BY due_at, resource_id) AS kind_n
	FROM open WHERE group_n <= group_cap
), bounded AS (
	SELECT kind, resource_id, due_at, lease_holder IS NOT NULL AS lapsed FROM work_items
	WHERE (kind, resource_id) IN (SELECT kind, resource_id FROM fair WHERE kind_n <= kind_room)
		AND due_at <= coalesce($2::timestamptz, now())
		AND (lease_expires_at IS NULL OR lease_expires_at <= coalesce($2::timestamptz, now()))
	FOR UPDATE SKIP LOCKED
), due AS (
	SELECT kind, resource_id, lapsed FROM (SELECT * FROM plain UNION ALL SELECT * FROM bounded) AS d
	ORDER BY due_at
	LIMIT $3
)
UPDATE work_items AS w SET
	lease_holder = $4,
	lease_expires_at = coalesce($2::timestamptz, now()) + $5::int8 * interval '1 microsecond',
	epoch = w.epoch + 1,
	updated_at = coalesce($2::timestamptz, now())
FROM due
WHERE w.kind = due.kind AND w.resource_id = due.resource_id
RETURNING w.kind, w.resource_id, w.epoch, w.generation, w.attempts, w.lease_holder, w.lease_expires_at, due.lapsed`

// Claim leases up to Limit due items of Kinds whose lease is free or expired, within each kind's
// room and each group's bound, skipping rows another claimer has locked, and grows each one's
// epoch. It runs as one statement (its own
// transaction): a lease must be visible to other replicas as soon as it is granted.
func Claim(ctx context.Context, db *DB, p ClaimParams) ([]Lease, error) {
	if p.Holder == "" || len(p.Kinds) == 0 || p.Limit <= 0 || p.LeaseTTL <= 0 {
		return nil, fmt.Errorf("store: claim needs a holder, kinds, a positive limit and lease TTL")
	}
	var kinds []string
	var rooms, caps []int64
	for _, k := range p.Kinds {
		room, ok := p.KindLimits[k]
		if !ok {
			room = p.Limit
		}
		if room <= 0 {
			continue
		}
		kinds, rooms, caps = append(kinds, k), append(rooms, int64(min(room, p.Limit))), append(caps, int64(p.GroupLimits[k]))
	}
	if len(kinds) == 0 {
		return nil, nil
	}
	rows, err := db.pool.Query(ctx, sqlClaim, kinds, nowArg(p.Now), p.Limit, p.Holder, p.LeaseTTL.Microseconds(), rooms, caps)
	if err != nil {
		return nil, fmt.Errorf("store: claim: %w", TranslateError(err))
	}
	lapsed := map[string]int{} // per kind: claims that took over a lease left to expire
	leases, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Lease, error) {
		var l Lease
		var tookOver bool
		err := row.Scan(&l.Kind, &l.ResourceID, &l.Epoch, &l.Generation, &l.Attempts, &l.Holder, &l.ExpiresAt, &tookOver)
		if tookOver {
			lapsed[l.Kind]++
		}
		return l, err
	})
	if err != nil {
		return nil, fmt.Errorf("store: claim: %w", TranslateError(err))
	}
	claimed := map[string]int{}
	for _, l := range leases {
		claimed[l.Kind]++
	}
	for kind, n := range claimed {
		observe.WorkClaimed(kind, n, lapsed[kind])
	}
	return leases, nil
}

// The fence every holder write shares: the row is still ours when its epoch is the one we were
// granted and it is still held by us (not released by an earlier write of ours).
const fence = `WHERE kind = $1 AND resource_id = $2 AND epoch = $3 AND lease_holder = $4`

// RenewParams extends a lease.
type RenewParams struct {
	Lease    Lease
	LeaseTTL time.Duration
	Now      time.Time // zero: database clock
}

const sqlRenew = `UPDATE work_items SET
	lease_expires_at = coalesce($5::timestamptz, now()) + $6::int8 * interval '1 microsecond',
	updated_at = coalesce($5::timestamptz, now())
` + fence + `
RETURNING lease_expires_at, generation`

// Renew pushes the lease's expiry to now + LeaseTTL and returns the updated lease (its
// Generation tells whether the item was enqueued again meanwhile). ErrLeaseLost: another
// holder claimed it, or it was already released.
func Renew(ctx context.Context, db *DB, p RenewParams) (Lease, error) {
	l := p.Lease
	if p.LeaseTTL <= 0 {
		return l, fmt.Errorf("store: renew needs a positive lease TTL")
	}
	err := db.pool.QueryRow(ctx, sqlRenew, l.Kind, l.ResourceID, l.Epoch, l.Holder,
		nowArg(p.Now), p.LeaseTTL.Microseconds()).Scan(&l.ExpiresAt, &l.Generation)
	if err != nil {
		return p.Lease, leaseWriteError("renew", p.Lease, err)
	}
	return l, nil
}

// CompleteParams finishes a lease successfully.
type CompleteParams struct {
	Lease Lease
	Now   time.Time // zero: database clock
}

// Complete keeps the row (idle) rather than deleting it, so epoch keeps growing across the
// resource's life; see the migration.
const sqlComplete = `UPDATE work_items SET
	due_at = CASE WHEN generation = $5 THEN NULL ELSE due_at END,
	lease_holder = NULL, lease_expires_at = NULL, attempts = 0, last_error = NULL,
	updated_at = coalesce($6::timestamptz, now())
` + fence

// Complete records success: the item goes idle, unless it was enqueued again while the lease
// was held (its generation moved), in which case it is released and due at once.
// ErrLeaseLost: another holder claimed it; nothing was written.
func Complete(ctx context.Context, db *DB, p CompleteParams) error {
	l := p.Lease
	return fencedExec(ctx, db, "complete", l, sqlComplete, l.Generation, nowArg(p.Now))
}

// RequeueParams finishes a lease successfully but asks to run again later.
type RequeueParams struct {
	Lease Lease
	// After is the delay from now until the item is due again.
	After time.Duration
	Now   time.Time // zero: database clock
}

const sqlRequeue = `UPDATE work_items SET
	due_at = CASE WHEN generation = $5
		THEN coalesce($6::timestamptz, now()) + $7::int8 * interval '1 microsecond'
		ELSE least(due_at, coalesce($6::timestamptz, now()) + $7::int8 * interval '1 microsecond') END,
	lease_holder = NULL, lease_expires_at = NULL, attempts = 0, last_error = NULL,
	updated_at = coalesce($6::timestamptz, now())
` + fence

// Requeue records success and keeps the item due After from now (for example to poll a
// provider until a load balancer is active, or the next run of a periodic pass); an enqueue
// that arrived meanwhile keeps its earlier due time. ErrLeaseLost: nothing was written.
func Requeue(ctx context.Context, db *DB, p RequeueParams) error {
	l := p.Lease
	return fencedExec(ctx, db, "requeue", l, sqlRequeue, l.Generation, nowArg(p.Now), max(p.After, 0).Microseconds())
}

// RetryParams records a failed attempt.
type RetryParams struct {
	Lease Lease
	// After is the delay from now until the next attempt.
	After time.Duration
	// Error is stored as the item's last_error; empty keeps the previous one (transient
	// failures the tenant need not see). It must not contain secrets.
	Error string
	Now   time.Time // zero: database clock
}

const sqlRetry = `UPDATE work_items SET
	due_at = coalesce($5::timestamptz, now()) + $6::int8 * interval '1 microsecond',
	attempts = attempts + 1,
	last_error = coalesce($7, last_error),
	lease_holder = NULL, lease_expires_at = NULL,
	updated_at = coalesce($5::timestamptz, now())
` + fence

// Retry records a failed attempt: attempts grows, the error is kept, and the item is released
// and due After from now. ErrLeaseLost: another holder claimed it; nothing was written.
func Retry(ctx context.Context, db *DB, p RetryParams) error {
	l := p.Lease
	var msg *string
	if p.Error != "" {
		m := truncateUTF8(p.Error, maxLastErrorBytes)
		msg = &m
	}
	return fencedExec(ctx, db, "retry", l, sqlRetry, nowArg(p.Now), max(p.After, 0).Microseconds(), msg)
}

// ReleaseParams gives a lease back without a verdict.
type ReleaseParams struct {
	Lease Lease
	Now   time.Time // zero: database clock
}

const sqlRelease = `UPDATE work_items SET
	lease_holder = NULL, lease_expires_at = NULL,
	updated_at = coalesce($5::timestamptz, now())
` + fence

// Release frees the lease and leaves the item due as it was, without counting an attempt: a
// replica shutting down hands its unfinished work to the others at once rather than after the
// lease expires. ErrLeaseLost: nothing was written.
func Release(ctx context.Context, db *DB, p ReleaseParams) error {
	l := p.Lease
	return fencedExec(ctx, db, "release", l, sqlRelease, nowArg(p.Now))
}

// fencedExec runs a holder write whose first four parameters are the fence; no row changed
// means the lease is gone.
func fencedExec(ctx context.Context, db *DB, op string, l Lease, stmt string, args ...any) error {
	all := append([]any{l.Kind, l.ResourceID, l.Epoch, l.Holder}, args...)
	tag, err := db.pool.Exec(ctx, stmt, all...)
	if err != nil {
		return leaseWriteError(op, l, err)
	}
	if tag.RowsAffected() == 0 {
		return leaseWriteError(op, l, ErrLeaseLost)
	}
	return nil
}

// leaseWriteError names the operation and item; a missing row is a lost lease.
func leaseWriteError(op string, l Lease, err error) error {
	if errors.Is(err, pgx.ErrNoRows) {
		err = ErrLeaseLost
	}
	if errors.Is(err, ErrLeaseLost) {
		observe.FenceRefused(l.Kind, op)
	}
	return fmt.Errorf("store: %s %s/%s epoch %d: %w", op, l.Kind, l.ResourceID, l.Epoch, TranslateError(err))
}

// sqlLockLease takes the lease check's lock: FOR KEY SHARE, the one row lock a request's Enqueue
// (an upsert that changes no key, so FOR NO KEY UPDATE) does not wait for, and a claim's FOR
// UPDATE SKIP LOCKED does skip. See lockorder.go.
const sqlLockLease = `SELECT 1 FROM work_items WHERE kind = $1 AND resource_id = $2 FOR KEY SHARE`

// sqlReadLease reads the lease after sqlLockLease, in a statement of its own.
const sqlReadLease = `SELECT epoch, lease_holder FROM work_items WHERE kind = $1 AND resource_id = $2`

// CheckLease is the fence of a reconciler's result transaction: call it first in the
// transaction that writes what the reconciler learned (ExecuteTx or ExecuteLockedTx). It fails
// with ErrLeaseLost when the item's epoch moved or the lease was released, and the caller must
// then write nothing.
//
// It locks the row FOR KEY SHARE, which only a claim conflicts with: no claim can take the lease
// over until this transaction ends, while a request that queues the resource again (Enqueue,
// holding the resource's row) does not wait for it, so the two never wait for each other (the
// lock order, lockorder.go). A key-share lock is granted on a row whose newer version changed
// no key without waiting for or returning that version, so the lease is read by a second
// statement in the same round trip: at READ COMMITTED it sees every claim committed before the
// lock was granted, and none can commit after; under SERIALIZABLE (and on CockroachDB) the read
// is tracked, and a claim committing between this read and the caller's COMMIT makes one of
// the two transactions fail.
func CheckLease(ctx context.Context, tx Tx, lease Lease) error {
	var epoch int64
	var holder *string
	b := &pgx.Batch{}
	b.Queue(sqlLockLease, lease.Kind, lease.ResourceID)
	b.Queue(sqlReadLease, lease.Kind, lease.ResourceID)
	br := tx.SendBatch(ctx, b)
	var one int
	err := br.QueryRow().Scan(&one)
	if err == nil {
		err = br.QueryRow().Scan(&epoch, &holder)
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return leaseWriteError("check lease", lease, err)
	}
	if epoch != lease.Epoch || holder == nil || *holder != lease.Holder {
		return leaseWriteError("check lease", lease, ErrLeaseLost)
	}
	return nil
}

const sqlLastError = `SELECT coalesce(last_error, '') FROM work_items WHERE kind = $1 AND resource_id = $2`

// LastError returns the last recorded failure of kind's reconciler on resourceID, or "" when
// its last attempt succeeded or it never ran.
func LastError(ctx context.Context, db *DB, kind, resourceID string) (string, error) {
	var msg string
	err := db.pool.QueryRow(ctx, sqlLastError, kind, resourceID).Scan(&msg)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("store: last error %s/%s: %w", kind, resourceID, TranslateError(err))
	}
	return msg, nil
}

const sqlWorkItem = `SELECT kind, resource_id, due_at, coalesce(lease_holder, ''), lease_expires_at, epoch,
	generation, attempts, coalesce(last_error, ''), created_at, updated_at
FROM work_items WHERE kind = $1 AND resource_id = $2`

// GetWorkItem returns the stored row of (kind, resourceID); ErrNotFound when there is none.
func GetWorkItem(ctx context.Context, db *DB, kind, resourceID string) (WorkItem, error) {
	var w WorkItem
	err := db.pool.QueryRow(ctx, sqlWorkItem, kind, resourceID).Scan(&w.Kind, &w.ResourceID, &w.DueAt,
		&w.Holder, &w.LeaseExpiresAt, &w.Epoch, &w.Generation, &w.Attempts, &w.LastError, &w.CreatedAt, &w.UpdatedAt)
	if err != nil {
		return WorkItem{}, fmt.Errorf("store: work item %s/%s: %w", kind, resourceID, TranslateError(err))
	}
	return w, nil
}

const sqlCountDue = `SELECT count(*) FROM work_items
WHERE kind = ANY($1::text[]) AND due_at IS NOT NULL AND due_at <= coalesce($2::timestamptz, now())`

// CountDue counts items of kinds that are due at now (held ones included): zero means the
// queue of those kinds is drained.
func CountDue(ctx context.Context, db *DB, kinds []string, now time.Time) (int, error) {
	var n int
	if err := db.pool.QueryRow(ctx, sqlCountDue, kinds, nowArg(now)).Scan(&n); err != nil {
		return 0, fmt.Errorf("store: count due: %w", TranslateError(err))
	}
	return n, nil
}

// PeriodicParams declares a periodic pass.
type PeriodicParams struct {
	Kind     string
	Interval time.Duration
	Now      time.Time // zero: database clock
}

const sqlEnsurePeriodic = `INSERT INTO work_items (kind, resource_id, due_at, generation, created_at, updated_at)
VALUES ($1, $2, coalesce($3::timestamptz, now()), 1, now(), now())
ON CONFLICT (kind, resource_id) DO UPDATE SET
	due_at = CASE
		WHEN work_items.due_at IS NULL THEN excluded.due_at
		WHEN work_items.due_at > excluded.due_at + $4::int8 * interval '1 microsecond'
			THEN excluded.due_at + $4::int8 * interval '1 microsecond'
		ELSE work_items.due_at END`

// EnsurePeriodic makes sure the singleton row of a periodic pass exists: a new one is due now;
// an existing one keeps its schedule, pulled in to at most one Interval away (the interval
// may have been shortened by a deploy). Every replica calls it at start; the row's lease makes
// one replica run each pass.
func EnsurePeriodic(ctx context.Context, db *DB, p PeriodicParams) error {
	if p.Interval <= 0 {
		return fmt.Errorf("store: periodic %s needs a positive interval", p.Kind)
	}
	if _, err := db.pool.Exec(ctx, sqlEnsurePeriodic, p.Kind, PeriodicResourceID, nowArg(p.Now),
		p.Interval.Microseconds()); err != nil {
		return fmt.Errorf("store: periodic %s: %w", p.Kind, TranslateError(err))
	}
	return nil
}

// nowArg turns an injected time into a query argument: the zero time becomes NULL, which the
// statements replace with the database clock.
func nowArg(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t
}

// truncateUTF8 cuts s to at most n bytes without splitting a character.
func truncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:n]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}

// Enqueue queues Enqueue's upsert.
func (w *Writes) Enqueue(kind, resourceID string, dueAt *time.Time) {
	w.add("enqueue "+kind+"/"+resourceID, nil, sqlEnqueue, kind, resourceID, dueAt)
}

// EnqueueNew queues the first work item of a resource the same transaction creates: a plain
// insert, because no item can exist yet for a fresh id, and an insert that cannot conflict
// skips the upsert's speculative insertion (two WAL records fewer per create). An item that
// did exist would fail the transaction on work_items_pkey rather than be merged.
func (w *Writes) EnqueueNew(kind, resourceID string) {
	w.add("enqueue new "+kind+"/"+resourceID, nil, sqlEnqueueNew, kind, resourceID)
}

// EnqueueMany is Enqueue for many resources of one kind (each due at its dueAt), in one round
// trip: a list that shows many load balancers ready wakes them together. The rows are written
// in id order, the lock order among work items (lockorder.go).
func EnqueueMany(ctx context.Context, tx Tx, kind string, resourceIDs []string, dueAt []time.Time) error {
	order := make([]int, len(resourceIDs))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return strings.Compare(resourceIDs[a], resourceIDs[b]) })
	b := &pgx.Batch{}
	for _, i := range order {
		b.Queue(sqlEnqueue, kind, resourceIDs[i], dueAt[i])
	}
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("store: enqueue %d of %s: %w", len(resourceIDs), kind, TranslateError(err))
	}
	return nil
}
