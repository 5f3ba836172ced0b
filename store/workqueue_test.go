package store_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"better-compute.dev/compute/store"
	"better-compute.dev/compute/store/storetest"
)

const (
	kindA = "test.kind-a"
	kindB = "test.kind-b"
	ttl   = 30 * time.Second
)

// queue is a per-test bundle: a fresh schema and a movable clock for the queue's "now".
type queue struct {
	t   *testing.T
	ctx context.Context
	db  *store.DB
	now time.Time
}

func newQueue(t *testing.T) *queue {
	t.Helper()
	// The clock starts ahead of the database clock, so items enqueued "now" are due.
	return &queue{t: t, ctx: context.Background(), db: storetest.New(t), now: time.Now().Add(time.Minute).UTC().Truncate(time.Microsecond)}
}

func (q *queue) advance(d time.Duration) { q.now = q.now.Add(d) }

func (q *queue) enqueue(kind, id string, due *time.Time) {
	q.t.Helper()
	if err := store.ExecuteTx(q.ctx, q.db, func(tx store.Tx) error { return store.Enqueue(q.ctx, tx, kind, id, due) }); err != nil {
		q.t.Fatalf("enqueue %s/%s: %v", kind, id, err)
	}
}

func (q *queue) claim(holder string, limit int, kinds ...string) []store.Lease {
	q.t.Helper()
	if len(kinds) == 0 {
		kinds = []string{kindA}
	}
	leases, err := store.Claim(q.ctx, q.db, store.ClaimParams{Holder: holder, Kinds: kinds, Limit: limit, LeaseTTL: ttl, Now: q.now})
	if err != nil {
		q.t.Fatalf("claim: %v", err)
	}
	return leases
}

func (q *queue) claimOne(holder string) store.Lease {
	q.t.Helper()
	leases := q.claim(holder, 1)
	if len(leases) != 1 {
		q.t.Fatalf("%s claimed %d leases, want 1", holder, len(leases))
	}
	return leases[0]
}

func (q *queue) item(kind, id string) store.WorkItem {
	q.t.Helper()
	w, err := store.GetWorkItem(q.ctx, q.db, kind, id)
	if err != nil {
		q.t.Fatalf("work item %s/%s: %v", kind, id, err)
	}
	return w
}

func ids(leases []store.Lease) []string {
	out := make([]string, len(leases))
	for i, l := range leases {
		out[i] = l.Kind + "/" + l.ResourceID
	}
	sort.Strings(out)
	return out
}

func TestClaimSelectsDueItemsOfItsKinds(t *testing.T) {
	t.Parallel()
	q := newQueue(t)
	later := q.now.Add(time.Hour)
	q.enqueue(kindA, "r1", nil)
	q.enqueue(kindA, "r2", nil)
	q.enqueue(kindA, "r3", &later)
	q.enqueue(kindB, "r4", nil)

	first := q.claim("h1", 10)
	if diff := cmp.Diff([]string{kindA + "/r1", kindA + "/r2"}, ids(first)); diff != "" {
		t.Errorf("first claim (-want +got):\n%s", diff)
	}
	if got := q.claim("h2", 10); len(got) != 0 {
		t.Errorf("held items claimed again: %v", ids(got))
	}
	if diff := cmp.Diff([]string{kindB + "/r4"}, ids(q.claim("h2", 10, kindB))); diff != "" {
		t.Errorf("kind B claim (-want +got):\n%s", diff)
	}
	for _, l := range first {
		if err := store.Complete(q.ctx, q.db, store.CompleteParams{Lease: l, Now: q.now}); err != nil {
			t.Fatal(err)
		}
	}
	q.advance(time.Hour)
	got := q.claim("h2", 10)
	if diff := cmp.Diff([]string{kindA + "/r3"}, ids(got)); diff != "" {
		t.Errorf("claim an hour later (-want +got):\n%s", diff)
	}
	l := got[0]
	if l.Epoch != 1 || l.Generation != 1 || l.Attempts != 0 || l.Holder != "h2" || !l.ExpiresAt.Equal(q.now.Add(ttl)) {
		t.Errorf("lease = %+v, want epoch 1, generation 1, attempts 0, holder h2, expiring at %v", l, q.now.Add(ttl))
	}
}

func TestClaimHonoursLimitAndDueOrder(t *testing.T) {
	t.Parallel()
	q := newQueue(t)
	for i := 5; i >= 1; i-- {
		due := q.now.Add(-time.Duration(i) * time.Minute)
		q.enqueue(kindA, fmt.Sprintf("r%d", i), &due)
	}
	got := q.claim("h1", 2)
	if diff := cmp.Diff([]string{kindA + "/r4", kindA + "/r5"}, ids(got)); diff != "" {
		t.Errorf("the two most overdue (-want +got):\n%s", diff)
	}
}

func TestEnqueueKeepsEarliestDueAndCountsGenerations(t *testing.T) {
	t.Parallel()
	q := newQueue(t)
	soon, later := q.now.Add(time.Minute), q.now.Add(time.Hour)
	q.enqueue(kindA, "r1", &later)
	q.enqueue(kindA, "r1", &soon)
	q.enqueue(kindA, "r1", &later)
	w := q.item(kindA, "r1")
	if w.DueAt == nil || !w.DueAt.Equal(soon) || w.Generation != 3 {
		t.Errorf("item = due %v generation %d, want due %v generation 3", w.DueAt, w.Generation, soon)
	}
}

// TestEnqueueNewIsAPlainInsert: a create's work item (Writes.EnqueueNew) is the item Enqueue
// would have made (generation 1, due now: claimable at once, and Enqueue afterwards counts on
// from it), and an item that already exists fails the transaction instead of being merged.
func TestEnqueueNewIsAPlainInsert(t *testing.T) {
	t.Parallel()
	q := newQueue(t)
	enqueueNew := func(id string) error {
		return store.ExecuteTwoTrips(q.ctx, q.db, func(*store.Reads) {}, func() (*store.Writes, error) {
			var w store.Writes
			w.EnqueueNew(kindA, id)
			return &w, nil
		})
	}
	if err := enqueueNew("fresh"); err != nil {
		t.Fatal(err)
	}
	if w := q.item(kindA, "fresh"); w.DueAt == nil || w.Generation != 1 {
		t.Fatalf("new item = due %v generation %d, want due now, generation 1", w.DueAt, w.Generation)
	}
	if got := ids(q.claim("h", 10)); !cmp.Equal(got, []string{kindA + "/fresh"}) {
		t.Fatalf("claimed %v, want the new item", got)
	}
	q.enqueue(kindA, "fresh", nil)
	if w := q.item(kindA, "fresh"); w.Generation != 2 {
		t.Errorf("after Enqueue generation %d, want 2", w.Generation)
	}
	err := enqueueNew("fresh")
	if !errors.Is(err, store.ErrConflict) || store.ConstraintName(err) != "work_items_pkey" {
		t.Fatalf("EnqueueNew of an existing item: %v, want a conflict on work_items_pkey", err)
	}
}

func TestLeaseExpiryAndTakeover(t *testing.T) {
	t.Parallel()
	q := newQueue(t)
	q.enqueue(kindA, "r1", nil)
	a := q.claimOne("a")

	q.advance(ttl - time.Second)
	if got := q.claim("b", 1); len(got) != 0 {
		t.Fatalf("b took a live lease: %v", ids(got))
	}
	renewed, err := store.Renew(q.ctx, q.db, store.RenewParams{Lease: a, LeaseTTL: ttl, Now: q.now})
	if err != nil {
		t.Fatalf("renew: %v", err)
	}
	if !renewed.ExpiresAt.Equal(q.now.Add(ttl)) {
		t.Errorf("renewed expiry %v, want %v", renewed.ExpiresAt, q.now.Add(ttl))
	}
	q.advance(ttl - time.Second)
	if got := q.claim("b", 1); len(got) != 0 {
		t.Fatalf("b took a renewed lease: %v", ids(got))
	}
	q.advance(2 * time.Second)
	b := q.claimOne("b")
	if b.Epoch != a.Epoch+1 || b.Holder != "b" {
		t.Errorf("takeover lease = %+v, want epoch %d held by b", b, a.Epoch+1)
	}
	if _, err := store.Renew(q.ctx, q.db, store.RenewParams{Lease: renewed, LeaseTTL: ttl, Now: q.now}); !errors.Is(err, store.ErrLeaseLost) {
		t.Errorf("a renews after takeover: err = %v, want ErrLeaseLost", err)
	}
}

// TestFencingAfterTakeover: once b holds the item, every write of a fails with ErrLeaseLost
// and leaves the row as b's.
func TestFencingAfterTakeover(t *testing.T) {
	t.Parallel()
	q := newQueue(t)
	q.enqueue(kindA, "r1", nil)
	a := q.claimOne("a")
	q.advance(ttl + time.Second)
	b := q.claimOne("b")
	before := q.item(kindA, "r1")

	writes := []struct {
		reason string
		write  func() error
	}{
		{reason: "complete", write: func() error { return store.Complete(q.ctx, q.db, store.CompleteParams{Lease: a, Now: q.now}) }},
		{reason: "retry", write: func() error {
			return store.Retry(q.ctx, q.db, store.RetryParams{Lease: a, After: time.Minute, Error: "stale failure", Now: q.now})
		}},
		{reason: "requeue", write: func() error {
			return store.Requeue(q.ctx, q.db, store.RequeueParams{Lease: a, After: time.Minute, Now: q.now})
		}},
		{reason: "release", write: func() error { return store.Release(q.ctx, q.db, store.ReleaseParams{Lease: a, Now: q.now}) }},
		{reason: "renew", write: func() error {
			_, err := store.Renew(q.ctx, q.db, store.RenewParams{Lease: a, LeaseTTL: ttl, Now: q.now})
			return err
		}},
		{reason: "check lease in a result transaction", write: func() error {
			return store.ExecuteTx(q.ctx, q.db, func(tx store.Tx) error {
				if err := store.CheckLease(q.ctx, tx, a); err != nil {
					return err
				}
				_, err := tx.Exec(q.ctx, `UPDATE work_items SET last_error = 'written by a stale holder'`)
				return err
			})
		}},
	}
	for _, w := range writes {
		if err := w.write(); !errors.Is(err, store.ErrLeaseLost) {
			t.Errorf("%s by the stale holder: err = %v, want ErrLeaseLost", w.reason, err)
		}
	}
	if diff := cmp.Diff(before, q.item(kindA, "r1")); diff != "" {
		t.Errorf("stale holder changed the row (-before +after):\n%s", diff)
	}
	if err := store.ExecuteTx(q.ctx, q.db, func(tx store.Tx) error { return store.CheckLease(q.ctx, tx, b) }); err != nil {
		t.Errorf("current holder's CheckLease: %v", err)
	}
	if err := store.Complete(q.ctx, q.db, store.CompleteParams{Lease: b, Now: q.now}); err != nil {
		t.Errorf("current holder's Complete: %v", err)
	}
}

// TestCompletedThenReenqueuedKeepsEpochGrowing: a completed item stays as an idle row, so a
// holder paused across complete-and-reenqueue cannot meet its old epoch again.
func TestCompletedThenReenqueuedKeepsEpochGrowing(t *testing.T) {
	t.Parallel()
	q := newQueue(t)
	q.enqueue(kindA, "r1", nil)
	a := q.claimOne("a")
	q.advance(ttl + time.Second)
	b := q.claimOne("b")
	if err := store.Complete(q.ctx, q.db, store.CompleteParams{Lease: b, Now: q.now}); err != nil {
		t.Fatal(err)
	}
	if got := q.claim("c", 1); len(got) != 0 {
		t.Fatalf("idle item claimed: %v", ids(got))
	}
	q.enqueue(kindA, "r1", nil)
	c := q.claimOne("a") // same holder name as the paused one
	if c.Epoch <= b.Epoch {
		t.Errorf("epoch after reenqueue = %d, want above %d", c.Epoch, b.Epoch)
	}
	err := store.ExecuteTx(q.ctx, q.db, func(tx store.Tx) error { return store.CheckLease(q.ctx, tx, a) })
	if !errors.Is(err, store.ErrLeaseLost) {
		t.Errorf("paused holder's CheckLease: err = %v, want ErrLeaseLost", err)
	}
}

func TestCompleteAfterEnqueueDuringProcessingRunsAgain(t *testing.T) {
	t.Parallel()
	q := newQueue(t)
	q.enqueue(kindA, "r1", nil)
	l := q.claimOne("a")
	q.enqueue(kindA, "r1", nil) // the tenant changed something while a worked
	if err := store.Complete(q.ctx, q.db, store.CompleteParams{Lease: l, Now: q.now}); err != nil {
		t.Fatal(err)
	}
	again := q.claimOne("b")
	if again.Generation != 2 {
		t.Errorf("second run sees generation %d, want 2", again.Generation)
	}
	if err := store.Complete(q.ctx, q.db, store.CompleteParams{Lease: again, Now: q.now}); err != nil {
		t.Fatal(err)
	}
	if w := q.item(kindA, "r1"); w.DueAt != nil || w.Holder != "" {
		t.Errorf("item after the second run: due %v holder %q, want idle", w.DueAt, w.Holder)
	}
	if err := store.Complete(q.ctx, q.db, store.CompleteParams{Lease: again, Now: q.now}); !errors.Is(err, store.ErrLeaseLost) {
		t.Errorf("second Complete of one lease: err = %v, want ErrLeaseLost", err)
	}
}

func TestRetryRecordsAttemptsAndErrors(t *testing.T) {
	t.Parallel()
	q := newQueue(t)
	q.enqueue(kindA, "r1", nil)
	l := q.claimOne("a")
	if err := store.Retry(q.ctx, q.db, store.RetryParams{Lease: l, After: time.Minute, Error: "provider said no", Now: q.now}); err != nil {
		t.Fatal(err)
	}
	w := q.item(kindA, "r1")
	if w.Attempts != 1 || w.LastError != "provider said no" || w.Holder != "" || !w.DueAt.Equal(q.now.Add(time.Minute)) {
		t.Errorf("after retry: %+v", w)
	}
	if got := q.claim("a", 1); len(got) != 0 {
		t.Fatalf("claimed before the retry is due: %v", ids(got))
	}
	q.advance(time.Minute)
	l = q.claimOne("a")
	if l.Attempts != 1 {
		t.Errorf("lease attempts = %d, want 1", l.Attempts)
	}
	// A transient failure with no message keeps the last recorded error.
	if err := store.Retry(q.ctx, q.db, store.RetryParams{Lease: l, After: time.Second, Now: q.now}); err != nil {
		t.Fatal(err)
	}
	if msg, err := store.LastError(q.ctx, q.db, kindA, "r1"); err != nil || msg != "provider said no" {
		t.Errorf("LastError = %q, %v; want the earlier message kept", msg, err)
	}
	q.advance(time.Second)
	l = q.claimOne("a")
	if err := store.Complete(q.ctx, q.db, store.CompleteParams{Lease: l, Now: q.now}); err != nil {
		t.Fatal(err)
	}
	if w := q.item(kindA, "r1"); w.Attempts != 0 || w.LastError != "" {
		t.Errorf("after success: attempts %d last error %q, want both cleared", w.Attempts, w.LastError)
	}
	if msg, err := store.LastError(q.ctx, q.db, kindA, "never-queued"); err != nil || msg != "" {
		t.Errorf("LastError of an unknown item = %q, %v; want empty", msg, err)
	}
}

func TestRetryTruncatesLongErrors(t *testing.T) {
	t.Parallel()
	q := newQueue(t)
	q.enqueue(kindA, "r1", nil)
	l := q.claimOne("a")
	long := strings.Repeat("é", 3000) // 6000 bytes
	if err := store.Retry(q.ctx, q.db, store.RetryParams{Lease: l, After: time.Second, Error: long, Now: q.now}); err != nil {
		t.Fatal(err)
	}
	msg, err := store.LastError(q.ctx, q.db, kindA, "r1")
	if err != nil {
		t.Fatal(err)
	}
	if len(msg) > 2048 || !strings.HasPrefix(long, msg) || len(msg) < 2000 {
		t.Errorf("stored %d bytes, want a character-aligned prefix of at most 2048", len(msg))
	}
}

func TestRequeueAndRelease(t *testing.T) {
	t.Parallel()
	q := newQueue(t)
	q.enqueue(kindA, "r1", nil)
	l := q.claimOne("a")
	if err := store.Requeue(q.ctx, q.db, store.RequeueParams{Lease: l, After: 10 * time.Second, Now: q.now}); err != nil {
		t.Fatal(err)
	}
	if got := q.claim("a", 1); len(got) != 0 {
		t.Fatalf("requeued item claimed early: %v", ids(got))
	}
	q.advance(10 * time.Second)
	l = q.claimOne("a")
	q.enqueue(kindA, "r1", nil) // arrives while held: the requeue must not postpone it
	if err := store.Requeue(q.ctx, q.db, store.RequeueParams{Lease: l, After: time.Hour, Now: q.now}); err != nil {
		t.Fatal(err)
	}
	l = q.claimOne("b")
	if err := store.Release(q.ctx, q.db, store.ReleaseParams{Lease: l, Now: q.now}); err != nil {
		t.Fatal(err)
	}
	again := q.claimOne("c")
	if again.Attempts != 0 || again.Epoch != l.Epoch+1 {
		t.Errorf("after release: %+v, want attempts 0 and epoch %d", again, l.Epoch+1)
	}
}

func TestEnsurePeriodic(t *testing.T) {
	t.Parallel()
	q := newQueue(t)
	p := store.PeriodicParams{Kind: kindA, Interval: 5 * time.Minute, Now: q.now}
	if err := store.EnsurePeriodic(q.ctx, q.db, p); err != nil {
		t.Fatal(err)
	}
	l := q.claimOne("a")
	if l.ResourceID != store.PeriodicResourceID {
		t.Errorf("periodic resource id = %q", l.ResourceID)
	}
	if err := store.Requeue(q.ctx, q.db, store.RequeueParams{Lease: l, After: time.Hour, Now: q.now}); err != nil {
		t.Fatal(err)
	}
	// A replica starting with the shorter interval pulls the next pass in.
	if err := store.EnsurePeriodic(q.ctx, q.db, p); err != nil {
		t.Fatal(err)
	}
	if w := q.item(kindA, store.PeriodicResourceID); !w.DueAt.Equal(q.now.Add(5 * time.Minute)) {
		t.Errorf("due %v, want %v", w.DueAt, q.now.Add(5*time.Minute))
	}
	if err := store.EnsurePeriodic(q.ctx, q.db, store.PeriodicParams{Kind: kindA}); err == nil {
		t.Error("zero interval accepted")
	}
}

func TestClaimRejectsBadParams(t *testing.T) {
	t.Parallel()
	q := newQueue(t)
	cases := []struct {
		reason string
		p      store.ClaimParams
	}{
		{reason: "no holder", p: store.ClaimParams{Kinds: []string{kindA}, Limit: 1, LeaseTTL: ttl}},
		{reason: "no kinds", p: store.ClaimParams{Holder: "a", Limit: 1, LeaseTTL: ttl}},
		{reason: "no limit", p: store.ClaimParams{Holder: "a", Kinds: []string{kindA}, LeaseTTL: ttl}},
		{reason: "no ttl", p: store.ClaimParams{Holder: "a", Kinds: []string{kindA}, Limit: 1}},
	}
	for _, tc := range cases {
		if _, err := store.Claim(q.ctx, q.db, tc.p); err == nil {
			t.Errorf("%s: claim accepted", tc.reason)
		}
	}
}
