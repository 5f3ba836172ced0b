package store_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"better-compute.dev/compute/store"
	"better-compute.dev/compute/store/storetest"
)

// waitBlockedBy waits until some backend waits for a lock held by backend pid.
func waitBlockedBy(t *testing.T, db *store.DB, pid int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var n int
		if err := db.Pool().QueryRow(context.Background(),
			`SELECT count(*) FROM pg_stat_activity WHERE $1::int = ANY(pg_blocking_pids(pid))`, pid).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("nobody waits for backend %d", pid)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// bookingEnv is a fresh schema with one tenant's quota row of limit units and an empty table of
// each name, (id TEXT PRIMARY KEY), for a test's transactions to write.
func bookingEnv(t *testing.T, limit int64, tables ...string) (db *store.DB, tenantID, poolID string) {
	t.Helper()
	db = storetest.New(t)
	tenantID, poolID = reservationQuota(t, db, limit)
	for _, table := range tables {
		if _, err := db.Pool().Exec(context.Background(), `CREATE TABLE `+table+` (id TEXT PRIMARY KEY)`); err != nil {
			t.Fatal(err)
		}
	}
	return db, tenantID, poolID
}

// rows counts what sql (a count) reports.
func rows(t *testing.T, db *store.DB, sql string) int64 {
	t.Helper()
	var n int64
	if err := db.Pool().QueryRow(context.Background(), sql).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

var errCreateFailed = errors.New("the create failed after its booking")

// TestLockedBookingsKeepTheQuota: 32 concurrent creates of one tenant against a limit of 10, each
// booking in its own locked transaction; odd ones fail after their reads (nothing taken). The
// quota is never overbooked, used counts exactly what committed, and no transaction ran twice:
// contenders waited on the quota row's lock instead of aborting.
func TestLockedBookingsKeepTheQuota(t *testing.T) {
	t.Parallel()
	db, tenantID, poolID := bookingEnv(t, 10, "made")
	var attempts, refused atomic.Int64
	var wg sync.WaitGroup
	for i := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var b store.QuotaBooking
			err := store.ExecuteLockedTwoTrips(context.Background(), db,
				func(r *store.Reads) { attempts.Add(1); r.BookQuota(poolID, tenantID, "loadBalancers", &b) },
				func() (*store.Writes, error) {
					switch {
					case !b.Booked:
						refused.Add(1)
						return nil, nil
					case i%2 == 1:
						return nil, errCreateFailed
					}
					var w store.Writes
					w.Exec("make", `INSERT INTO made VALUES ($1)`, fmt.Sprint(i))
					w.TakeQuota(&b)
					return &w, nil
				})
			if errors.Is(err, store.ErrQuotaRefused) {
				refused.Add(1) // seen free, gone by the time it was taken
			} else if err != nil && !errors.Is(err, errCreateFailed) {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	made := rows(t, db, `SELECT count(*) FROM made`)
	used, _ := reservationState(t, db)
	// A take waits for the holder's COMMIT or rollback and then judges the committed row, so
	// only committed creates ever make one refused: the 16 even ones fill the 10 units exactly.
	if used != made || made != 10 {
		t.Errorf("used %d, made %d: want 10 and 10", used, made)
	}
	if attempts.Load() != 32 {
		t.Errorf("%d attempts for 32 creates: a booking aborted and ran again", attempts.Load())
	}
	t.Logf("32 creates, limit 10, odd ones failing after their reads: %d made, %d refused", made, refused.Load())
}

// TestTakeWaitsForItsHolder: a create that saw a unit free takes it with its last write, which
// waits for a concurrent holder of the quota row instead of aborting, and then judges the row as
// that holder left it: refused (and nothing written) when the holder took the last unit,
// booked when the holder rolled back.
func TestTakeWaitsForItsHolder(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		commit     bool
		wantErr    error
		wantUsed   int64
		wantWrites int64
	}{
		{"holder commits: the last unit is gone", true, store.ErrQuotaRefused, 1, 0},
		{"holder rolls back: the unit is taken", false, nil, 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			db, tenantID, poolID := bookingEnv(t, 1, "made")
			ctx := context.Background()
			decided, proceed := make(chan struct{}), make(chan struct{})
			done := make(chan error, 1)
			var b store.QuotaBooking
			go func() {
				done <- store.ExecuteLockedTwoTrips(ctx, db,
					func(r *store.Reads) { r.BookQuota(poolID, tenantID, "loadBalancers", &b) },
					func() (*store.Writes, error) {
						close(decided)
						<-proceed
						var w store.Writes
						w.Exec("make", `INSERT INTO made VALUES ('waiter')`)
						w.TakeQuota(&b)
						return &w, nil
					})
			}()
			<-decided
			if !b.Booked {
				t.Fatalf("the unit was not seen free: %+v", b)
			}
			// The holder takes the row between the waiter's two round trips.
			holder, err := db.Pool().Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer holder.Rollback(ctx)
			var holderPID int
			if err := holder.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&holderPID); err != nil {
				t.Fatal(err)
			}
			if _, err := holder.Exec(ctx, `UPDATE quotas SET used = used + 1 WHERE pool_id = $1 AND used < quota_limit`, poolID); err != nil {
				t.Fatal(err)
			}
			close(proceed)
			waitBlockedBy(t, db, holderPID)
			if tc.commit {
				err = holder.Commit(ctx)
			} else {
				err = holder.Rollback(ctx)
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := <-done; !errors.Is(err, tc.wantErr) && !(err == nil && tc.wantErr == nil) {
				t.Fatalf("waiter: %v, want %v", err, tc.wantErr)
			}
			made := rows(t, db, `SELECT count(*) FROM made`)
			if used, _ := reservationState(t, db); used != tc.wantUsed || made != tc.wantWrites {
				t.Errorf("used %d, waiter's writes %d; want %d, %d", used, made, tc.wantUsed, tc.wantWrites)
			}
		})
	}
}

// TestLockedReadsHoldTheirRows: a row a locked transaction read to decide (FOR SHARE) cannot be
// changed by anyone until that transaction ends, so what it checked is still true at its COMMIT;
// a SERIALIZABLE transaction's reads take no such lock (the engine tracks them instead).
func TestLockedReadsHoldTheirRows(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		locked bool
	}{{"locked", true}, {"serializable", false}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			db, _, poolID := bookingEnv(t, 1)
			ctx := context.Background()
			holding, release := make(chan int, 1), make(chan struct{})
			done := make(chan error, 1)
			go func() {
				var pool store.Pool
				var poolErr error
				var pid int
				var pidErr error
				reads := func(r *store.Reads) {
					r.Pool(poolID, &pool, &poolErr)
					r.ReadInt(&pid, &pidErr, `SELECT pg_backend_pid()`)
				}
				decide := func() (*store.Writes, error) { holding <- pid; <-release; return nil, nil }
				if tc.locked {
					done <- store.ExecuteLockedTwoTrips(ctx, db, reads, decide)
				} else {
					done <- store.ExecuteTwoTrips(ctx, db, reads, decide)
				}
			}()
			pid := <-holding
			archived := make(chan error, 1)
			go func() {
				_, err := db.Pool().Exec(ctx, `UPDATE pools SET state = 'archived' WHERE id = $1`, poolID)
				archived <- err
			}()
			if tc.locked {
				waitBlockedBy(t, db, pid)
				select {
				case err := <-archived:
					t.Fatalf("the pool changed under a locked read: %v", err)
				default:
				}
			} else if err := <-archived; err != nil {
				t.Fatal(err)
			}
			close(release)
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if tc.locked {
				if err := <-archived; err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// TestRefusedBookingCounts: a booking counts the tenant's quota rows on the pool (what the pool's
// visibility is judged on; on PostgreSQL in the same read that sees the unit free, whether or not
// it is), and a pool the tenant has no quota on books nothing and shows none.
func TestRefusedBookingCounts(t *testing.T) {
	t.Parallel()
	db, tenantID, poolID := bookingEnv(t, 1)
	ctx := context.Background()
	if _, err := store.SetQuota(ctx, db.Q(), store.Quota{PoolID: poolID, TenantID: tenantID, Resource: "instances", Limit: 3}); err != nil {
		t.Fatal(err)
	}
	book := func(pool string) store.QuotaBooking {
		var b store.QuotaBooking
		if err := store.ExecuteLockedTwoTrips(ctx, db, func(r *store.Reads) { r.BookQuota(pool, tenantID, "loadBalancers", &b) },
			func() (*store.Writes, error) { var w store.Writes; w.TakeQuota(&b); return &w, nil }); err != nil {
			t.Fatal(err)
		}
		return b
	}
	for _, tc := range []struct {
		name      string
		pool      string
		booked    bool
		quotaRows int64
	}{
		{"booked", poolID, true, 2},
		{"refused: the tenant's two quota rows on the pool counted", poolID, false, 2},
		{"a pool without the tenant's quota", "pool_other", false, 0},
	} {
		if got := book(tc.pool); got.Booked != tc.booked || got.QuotaRows != tc.quotaRows {
			t.Errorf("%s: %+v, want booked %v, quota rows %d", tc.name, got, tc.booked, tc.quotaRows)
		}
	}
}

// TestTakeIsTheLastStatement: the unit is taken by a statement of its own after the fused inserts
// (so the quota row is locked from there to COMMIT only); when no unit is left it fails the
// transaction, so none of the inserts before it is written and the create is refused with
// ErrQuotaRefused.
func TestTakeIsTheLastStatement(t *testing.T) {
	t.Parallel()
	db, tenantID, poolID := bookingEnv(t, 1, "made", "also")
	ctx := context.Background()
	for _, tc := range []struct {
		name      string
		usedFirst bool // a concurrent create took the last unit between the two trips
		wantErr   error
		wantMade  int64
	}{
		{"a unit left: inserted and taken", false, nil, 1},
		{"the unit gone: nothing written", true, store.ErrQuotaRefused, 1},
	} {
		var b store.QuotaBooking
		var statements []string
		err := store.ExecuteLockedTwoTrips(ctx, db, func(r *store.Reads) { r.BookQuota(poolID, tenantID, "loadBalancers", &b) },
			func() (*store.Writes, error) {
				if tc.usedFirst {
					if _, err := db.Pool().Exec(ctx, `UPDATE quotas SET used = quota_limit WHERE pool_id = $1`, poolID); err != nil {
						return nil, err
					}
					b.Booked = true // as the reads saw it before the concurrent create committed
				}
				var w store.Writes
				w.Exec("make", `INSERT INTO made VALUES ($1)`, tc.name)
				w.Exec("also", `INSERT INTO also VALUES ($1)`, tc.name)
				w.TakeQuota(&b)
				statements = w.Statements(ctx)
				return &w, nil
			})
		if !errors.Is(err, tc.wantErr) && !(err == nil && tc.wantErr == nil) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.wantErr)
		}
		if len(statements) != 2 || !strings.Contains(statements[1], "UPDATE quotas") {
			t.Errorf("%s: the writes went as %q, want the inserts fused, then the unit taken", tc.name, statements)
		}
		made := rows(t, db, `SELECT (SELECT count(*) FROM made) + (SELECT count(*) FROM also)`)
		if used, _ := reservationState(t, db); made != 2*tc.wantMade || used != 1 {
			t.Errorf("%s: made %d, used %d; want %d, 1", tc.name, made, used, 2*tc.wantMade)
		}
	}
}

// TestUnitSeenFreeMustBeTaken: writes that forget to take the unit their reads saw free are
// refused before COMMIT (a create must never commit without its booking), and nothing of them
// is written.
func TestUnitSeenFreeMustBeTaken(t *testing.T) {
	t.Parallel()
	db, tenantID, poolID := bookingEnv(t, 1, "made")
	var b store.QuotaBooking
	err := store.ExecuteLockedTwoTrips(context.Background(), db, func(r *store.Reads) { r.BookQuota(poolID, tenantID, "loadBalancers", &b) },
		func() (*store.Writes, error) {
			var w store.Writes
			w.Exec("make", `INSERT INTO made VALUES ('untaken')`)
			return &w, nil
		})
	if err == nil || !strings.Contains(err.Error(), "not taken") {
		t.Fatalf("writes without their unit: %v, want refused", err)
	}
	if used, _ := reservationState(t, db); used != 0 || rows(t, db, `SELECT count(*) FROM made`) != 0 {
		t.Errorf("used %d after a refused transaction, want 0 and nothing made", used)
	}
}

// TestAwaitIdempotencyTwinWaitsForTheTwin: a refused create awaits a twin still inserting its
// key, and then finds the twin's record; the probe itself writes nothing.
func TestAwaitIdempotencyTwinWaitsForTheTwin(t *testing.T) {
	db := storetest.New(t)
	ctx := context.Background()
	if err := store.AwaitIdempotencyTwin(ctx, db, "t", "op", "k"); err != nil {
		t.Fatalf("no twin: %v", err)
	}
	if _, err := store.GetIdempotency(ctx, db.Q(), "t", "op", "k"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the probe left a record: %v", err)
	}
	twin, err := db.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer twin.Rollback(context.Background())
	if _, err := twin.Exec(ctx, `INSERT INTO idempotency_keys (tenant_id, operation, idem_key, request_hash, resource_id, expires_at)
		VALUES ('t', 'op', 'k', 'h', 'lb_1', now() + interval '1 hour')`); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- store.AwaitIdempotencyTwin(ctx, db, "t", "op", "k") }()
	select {
	case err := <-done:
		t.Fatalf("returned while the twin was in flight: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	if err := twin.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if rec, err := store.GetIdempotency(ctx, db.Q(), "t", "op", "k"); err != nil || rec.ResourceID != "lb_1" {
		t.Fatalf("twin's record: %v %v", rec, err)
	}
}
