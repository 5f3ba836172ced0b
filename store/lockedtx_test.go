package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"better-compute.dev/compute/store"
)

// The fenced writes of reconciler passes run as store.ExecuteLockedTx, READ COMMITTED on
// PostgreSQL. These tests hold it to what the lease fence promises under SERIALIZABLE: a
// takeover that commits before the check is seen, one in flight is waited for and then seen,
// and none can happen between the check and COMMIT.

// lockedWrite is a stale-or-current holder's fenced write of one result row.
func lockedWrite(q *queue, l store.Lease, result string) error {
	return store.ExecuteLockedTx(q.ctx, q.db, func(tx store.Tx) error {
		if err := store.CheckLease(q.ctx, tx, l); err != nil {
			return err
		}
		_, err := tx.Exec(q.ctx, `INSERT INTO results (holder, epoch) VALUES ($1, $2)`, result, l.Epoch)
		return err
	})
}

func newResultsQueue(t *testing.T) *queue {
	q := newQueue(t)
	if _, err := q.db.Pool().Exec(q.ctx, `CREATE TABLE results (holder TEXT NOT NULL, epoch BIGINT NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	return q
}

func (q *queue) results() []string {
	q.t.Helper()
	rows, err := q.db.Pool().Query(q.ctx, `SELECT holder FROM results ORDER BY epoch, holder`)
	if err != nil {
		q.t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		q.t.Fatal(err)
	}
	return out
}

// waitForLockWait waits until some backend of this database waits for a lock.
func waitForLockWait(t *testing.T, q *queue) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		var waiting int
		if err := q.db.Pool().QueryRow(q.ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting > 0 {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatal("no backend came to wait for a lock")
}

func TestLockedTxIsReadCommittedOnPostgreSQL(t *testing.T) {
	t.Parallel()
	q := newQueue(t)
	var level string
	if err := store.ExecuteLockedTx(q.ctx, q.db, func(tx store.Tx) error {
		return tx.QueryRow(q.ctx, `SHOW transaction_isolation`).Scan(&level)
	}); err != nil {
		t.Fatal(err)
	}
	if level != "read committed" {
		t.Errorf("ExecuteLockedTx isolation = %q, want read committed", level)
	}
	if err := store.ExecuteTx(q.ctx, q.db, func(tx store.Tx) error {
		return tx.QueryRow(q.ctx, `SHOW transaction_isolation`).Scan(&level)
	}); err != nil {
		t.Fatal(err)
	}
	if level != "serializable" {
		t.Errorf("ExecuteTx isolation = %q, want serializable", level)
	}
}

// TestLockedTxSeesACommittedTakeover: b took the lease over before a's write began.
func TestLockedTxSeesACommittedTakeover(t *testing.T) {
	t.Parallel()
	q := newResultsQueue(t)
	q.enqueue(kindA, "r1", nil)
	a := q.claimOne("a")
	q.advance(ttl + time.Second)
	b := q.claimOne("b")
	if err := lockedWrite(q, a, "a"); !errors.Is(err, store.ErrLeaseLost) {
		t.Errorf("stale holder's locked write: err = %v, want ErrLeaseLost", err)
	}
	if err := lockedWrite(q, b, "b"); err != nil {
		t.Errorf("current holder's locked write: %v", err)
	}
	if got := q.results(); len(got) != 1 || got[0] != "b" {
		t.Errorf("results = %v, want only b's", got)
	}
}

// TestLockedTxWaitsForATakeoverInFlight: a takeover has moved the epoch but not committed
// when a's check runs. The takeover holds the row FOR UPDATE, as a claim does (sqlClaim locks
// the rows it takes FOR UPDATE SKIP LOCKED before it moves their epoch). Under READ COMMITTED
// a's lease check waits for it and then reads the row's newest version, so a writes nothing
// (a snapshot read would have passed the check).
func TestLockedTxWaitsForATakeoverInFlight(t *testing.T) {
	t.Parallel()
	q := newResultsQueue(t)
	q.enqueue(kindA, "r1", nil)
	a := q.claimOne("a")
	takeover, err := q.db.Pool().Begin(q.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer takeover.Rollback(context.Background())
	if _, err := takeover.Exec(q.ctx, `SELECT 1 FROM work_items WHERE kind = $1 AND resource_id = 'r1' FOR UPDATE`, kindA); err != nil {
		t.Fatal(err)
	}
	if _, err := takeover.Exec(q.ctx, `UPDATE work_items SET epoch = epoch + 1, lease_holder = 'b' WHERE kind = $1 AND resource_id = 'r1'`, kindA); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- lockedWrite(q, a, "a") }()
	waitForLockWait(t, q)
	if err := takeover.Commit(q.ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, store.ErrLeaseLost) {
		t.Errorf("locked write behind a takeover: err = %v, want ErrLeaseLost", err)
	}
	if got := q.results(); len(got) != 0 {
		t.Errorf("results = %v, want none", got)
	}
}

// TestLockedTxHoldsTheLeaseToCommit: between a's check and a's COMMIT no replica can take the
// item (the claim skips the locked row); once a has committed, b takes it with the next
// epoch and a's later writes are refused.
func TestLockedTxHoldsTheLeaseToCommit(t *testing.T) {
	t.Parallel()
	q := newResultsQueue(t)
	q.enqueue(kindA, "r1", nil)
	a := q.claimOne("a")
	q.advance(ttl + time.Second) // a's lease has run out: only the row lock holds b off
	checked, release := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- store.ExecuteLockedTx(q.ctx, q.db, func(tx store.Tx) error {
			if err := store.CheckLease(q.ctx, tx, a); err != nil {
				return err
			}
			close(checked)
			<-release
			_, err := tx.Exec(q.ctx, `INSERT INTO results (holder, epoch) VALUES ('a', $1)`, a.Epoch)
			return err
		})
	}()
	<-checked
	if got := q.claim("b", 1); len(got) != 0 {
		t.Errorf("b claimed %v while a's fenced write was open", got)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatalf("a's fenced write: %v", err)
	}
	b := q.claimOne("b")
	if b.Epoch != a.Epoch+1 {
		t.Errorf("b's epoch = %d, want %d", b.Epoch, a.Epoch+1)
	}
	if err := lockedWrite(q, a, "a-late"); !errors.Is(err, store.ErrLeaseLost) {
		t.Errorf("a's write after the takeover: err = %v, want ErrLeaseLost", err)
	}
	if got := q.results(); len(got) != 1 || got[0] != "a" {
		t.Errorf("results = %v, want a's one write", got)
	}
}

// TestEnqueueDoesNotWaitForALeaseCheck: the lock order (lockorder.go). A request that holds
// its resource's row and queues the resource again must not wait for a fenced write that
// checked the lease and waits for that row: the enqueue goes through while the lease check's
// lock is held, and a claim still skips the item.
func TestEnqueueDoesNotWaitForALeaseCheck(t *testing.T) {
	t.Parallel()
	q := newResultsQueue(t)
	q.enqueue(kindA, "r1", nil)
	a := q.claimOne("a")
	fenced, err := q.db.Pool().BeginTx(q.ctx, pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
	if err != nil {
		t.Fatal(err)
	}
	defer fenced.Rollback(context.Background())
	if err := store.CheckLease(q.ctx, fenced, a); err != nil {
		t.Fatal(err)
	}
	q.advance(ttl + time.Second)
	err = store.ExecuteLockedTx(q.ctx, q.db, func(tx store.Tx) error {
		if _, err := tx.Exec(q.ctx, `SET LOCAL lock_timeout = '2s'`); err != nil {
			return err
		}
		return store.Enqueue(q.ctx, tx, kindA, "r1", nil)
	})
	if err != nil {
		t.Fatalf("enqueue while a lease check holds the item: %v", err)
	}
	if got := q.claim("b", 1); len(got) != 0 {
		t.Errorf("b claimed %v while a's fenced write was open", got)
	}
}
