package store_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"better-compute.dev/compute/store"
	"better-compute.dev/compute/store/storetest"
)

// reservationQuota makes a tenant with one quota row of limit units and returns its pool id.
func reservationQuota(t *testing.T, db *store.DB, limit int64) (tenantID, poolID string) {
	t.Helper()
	ctx := context.Background()
	q := db.Q()
	if _, err := store.InsertTenant(ctx, q, store.Tenant{ID: "resv", DisplayName: "resv"}); err != nil {
		t.Fatal(err)
	}
	if _, err := store.InsertAccount(ctx, q, store.Account{ID: "pacct_resv", TenantID: "resv", Kind: "digitalocean", Name: "a",
		TokenSealed: []byte("x"), APIURL: "http://127.0.0.1:1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := store.InsertPool(ctx, q, store.Pool{ID: "pool_resv", TenantID: "resv", AccountID: "pacct_resv", Name: "p",
		Regions: []string{"nyc3"}, Policy: []byte(`{}`), State: "active"}); err != nil {
		t.Fatal(err)
	}
	if _, err := store.SetQuota(ctx, q, store.Quota{PoolID: "pool_resv", TenantID: "resv", Resource: "loadBalancers", Limit: limit}); err != nil {
		t.Fatal(err)
	}
	return "resv", "pool_resv"
}

func reservationState(t *testing.T, db *store.DB) (used, reservations int64) {
	t.Helper()
	if err := db.Pool().QueryRow(context.Background(), `SELECT (SELECT used FROM quotas WHERE pool_id = 'pool_resv'),
		(SELECT count(*) FROM quota_reservations)`).Scan(&used, &reservations); err != nil {
		t.Fatal(err)
	}
	return used, reservations
}

func reserve(t *testing.T, db *store.DB, tenantID, poolID, id string) store.QuotaReservation {
	t.Helper()
	var res store.QuotaReservation
	if err := store.ReadAhead(context.Background(), db, func(r *store.Reads) {
		res = store.QuotaReservation{}
		r.ReserveQuota(poolID, tenantID, "loadBalancers", id, &res)
	}); err != nil {
		t.Fatal(err)
	}
	return res
}

// TestReservationsKeepTheQuota: 32 concurrent creates of one tenant against a limit of 10, each
// booking ahead, then consuming its unit in a transaction (even ones) or giving it back (odd
// ones, a create that failed): the quota is never overbooked, every unit is accounted for as a
// resource or refunded, and no booking lost a serialization race (they wait, they do not abort).
func TestReservationsKeepTheQuota(t *testing.T) {
	t.Parallel()
	db := storetest.New(t)
	tenantID, poolID := reservationQuota(t, db, 10)
	if _, err := db.Pool().Exec(context.Background(), `CREATE TABLE made (id TEXT PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	retriesBefore := store.TransactionRetries()
	var wg sync.WaitGroup
	var mu sync.Mutex
	booked := 0
	for i := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := context.Background()
			res := reserve(t, db, tenantID, poolID, fmt.Sprintf("qres_%d", i))
			if !res.Booked {
				return
			}
			mu.Lock()
			booked++
			mu.Unlock()
			if i%2 == 1 {
				if err := store.RefundReservation(ctx, db, res.ID); err != nil {
					t.Error(err)
				}
				return
			}
			var consumed bool
			if err := store.ExecuteTwoTrips(ctx, db, func(r *store.Reads) { r.ConsumeReservation(res.ID, &consumed) },
				func() (*store.Writes, error) {
					if !consumed {
						return nil, fmt.Errorf("reservation %s gone", res.ID)
					}
					var w store.Writes
					w.Exec("make", `INSERT INTO made VALUES ($1)`, res.ID)
					return &w, nil
				}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	var made int64
	if err := db.Pool().QueryRow(context.Background(), `SELECT count(*) FROM made`).Scan(&made); err != nil {
		t.Fatal(err)
	}
	used, left := reservationState(t, db)
	if used != made || left != 0 || made > 10 || booked < 10 {
		t.Fatalf("used %d, made %d, reservations left %d, booked %d: want used = made <= 10, none left, >= 10 booked", used, made, left, booked)
	}
	// Other tests of this package run in parallel and may retry their own transactions; the
	// bookings here are one-statement transactions on one hot row, and those never abort.
	t.Logf("made %d of 32 (limit 10, half refunded), %d transaction retries in the process meanwhile", made, store.TransactionRetries()-retriesBefore)
}

// TestRefundGivesBackOnce: a refund gives its unit back once, whatever happened before it: a
// second refund, and a refund after the reservation was consumed, do nothing.
func TestRefundGivesBackOnce(t *testing.T) {
	t.Parallel()
	db := storetest.New(t)
	ctx := context.Background()
	tenantID, poolID := reservationQuota(t, db, 5)
	a := reserve(t, db, tenantID, poolID, "qres_a")
	b := reserve(t, db, tenantID, poolID, "qres_b")
	if !a.Booked || !b.Booked || a.QuotaRows != 1 || b.InFlight != 0 {
		t.Fatalf("reservations %+v %+v", a, b)
	}
	for range 2 {
		if err := store.RefundReservation(ctx, db, a.ID); err != nil {
			t.Fatal(err)
		}
	}
	var consumed bool
	if err := store.ExecuteTwoTrips(ctx, db, func(r *store.Reads) { r.ConsumeReservation(b.ID, &consumed) },
		func() (*store.Writes, error) { return nil, nil }); err != nil || !consumed {
		t.Fatalf("consume: %v %v", consumed, err)
	}
	if err := store.RefundReservation(ctx, db, b.ID); err != nil {
		t.Fatal(err)
	}
	if used, left := reservationState(t, db); used != 1 || left != 0 {
		t.Fatalf("used %d, reservations %d: want 1 (b, consumed), 0", used, left)
	}
	// A pool the tenant has no quota on: nothing booked, nothing visible.
	var none store.QuotaReservation
	if err := store.ReadAhead(ctx, db, func(r *store.Reads) { r.ReserveQuota("pool_other", tenantID, "loadBalancers", "qres_c", &none) }); err != nil {
		t.Fatal(err)
	}
	if none.Booked || none.QuotaRows != 0 {
		t.Fatalf("foreign pool: %+v", none)
	}
}

// TestRefusedBookingCounts: a refused booking reports the tenant's quota rows and the
// reservations in flight (what Settling and the pool's visibility are judged on); a booked one
// reports the quota row it proved and nothing in flight, without counting.
func TestRefusedBookingCounts(t *testing.T) {
	t.Parallel()
	db := storetest.New(t)
	tenantID, poolID := reservationQuota(t, db, 2)
	a := reserve(t, db, tenantID, poolID, "qres_a")
	b := reserve(t, db, tenantID, poolID, "qres_b")
	c := reserve(t, db, tenantID, poolID, "qres_c")
	for _, tc := range []struct {
		name                string
		got                 store.QuotaReservation
		booked, settling    bool
		quotaRows, inFlight int64
	}{
		{"first booked", a, true, false, 1, 0},
		{"second booked", b, true, false, 1, 0},
		{"third refused while two are in flight", c, false, true, 1, 2},
	} {
		if tc.got.Booked != tc.booked || tc.got.Settling() != tc.settling || tc.got.QuotaRows != tc.quotaRows || tc.got.InFlight != tc.inFlight {
			t.Errorf("%s: %+v (settling %v), want booked %v, settling %v, quota rows %d, in flight %d",
				tc.name, tc.got, tc.got.Settling(), tc.booked, tc.settling, tc.quotaRows, tc.inFlight)
		}
	}
	if err := store.RefundReservation(context.Background(), db, a.ID); err != nil {
		t.Fatal(err)
	}
	if d := reserve(t, db, tenantID, poolID, "qres_d"); !d.Booked || d.InFlight != 0 {
		t.Errorf("after a refund: %+v, want booked", d)
	}
}

// TestStaleReservationsAreRefunded: a reservation whose replica died (never consumed, never
// refunded) is given back by the sweep once older than the lifetime, and not before.
func TestStaleReservationsAreRefunded(t *testing.T) {
	t.Parallel()
	db := storetest.New(t)
	ctx := context.Background()
	tenantID, poolID := reservationQuota(t, db, 5)
	reserve(t, db, tenantID, poolID, "qres_old")
	reserve(t, db, tenantID, poolID, "qres_new")
	if _, err := db.Pool().Exec(ctx, `UPDATE quota_reservations SET created_at = now() - INTERVAL '1 hour' WHERE id = 'qres_old'`); err != nil {
		t.Fatal(err)
	}
	n, err := store.RefundStaleReservations(ctx, db, 10*time.Minute, 100)
	if err != nil || n != 1 {
		t.Fatalf("sweep: %d %v", n, err)
	}
	if used, left := reservationState(t, db); used != 1 || left != 1 {
		t.Fatalf("used %d, reservations %d: want the young one kept (1, 1)", used, left)
	}
	if n, err := store.RefundStaleReservations(ctx, db, 10*time.Minute, 100); err != nil || n != 0 {
		t.Fatalf("second sweep: %d %v", n, err)
	}
}

// TestAheadTwoTrips: ExecuteAheadTwoTrips books and reads in one round trip and keeps the
// meaning of ReadAhead then ExecuteTwoTrips: the booking commits before the transaction (another
// connection sees it while the transaction is open), a refused proceed rolls the transaction
// back and leaves the booking to its caller, a failure in the read-ahead undoes the whole batch,
// and a failure after the read-ahead committed reruns the transaction alone, never the booking.
func TestAheadTwoTrips(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	serialization := &pgconn.PgError{Code: "40001", Message: "lost a race (test)"}
	for _, tc := range []struct {
		name                            string
		failAhead, failRead, failDecide bool
		proceed                         bool
		wantRan, wantErr                bool
		wantUsed, wantLeft              int64
		wantAheads, wantReads           int
		wantTrips                       int64
	}{
		{name: "booked and consumed", proceed: true, wantRan: true, wantUsed: 1, wantLeft: 0, wantAheads: 1, wantReads: 1, wantTrips: 2},
		{name: "proceed refused", proceed: false, wantUsed: 1, wantLeft: 1, wantAheads: 1, wantReads: 1, wantTrips: 2},
		{name: "read-ahead fails", failAhead: true, proceed: true, wantErr: true, wantUsed: 0, wantLeft: 0, wantAheads: 1, wantReads: 1},
		{name: "read after the commit fails", failRead: true, proceed: true, wantRan: true, wantUsed: 1, wantLeft: 0, wantAheads: 1, wantReads: 2},
		{name: "decide asks for a rerun", failDecide: true, proceed: true, wantRan: true, wantUsed: 1, wantLeft: 0, wantAheads: 1, wantReads: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			schema := storetest.NewSchema(t)
			var rt storetest.RoundTrips
			db, err := store.Open(store.WithTracer(ctx, &rt), schema.URL)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			tenantID, poolID := reservationQuota(t, db, 5)
			var res store.QuotaReservation
			var consumed bool
			aheads, reads, decides := 0, 0, 0
			var seenUsed int64 = -1
			before := rt.Count()
			ran, err := store.ExecuteAheadTwoTrips(ctx, db,
				func(r *store.Reads) {
					aheads++
					r.ReserveQuota(poolID, tenantID, "loadBalancers", fmt.Sprintf("qres_%d", aheads), &res)
					if tc.failAhead {
						var v int
						var found error
						r.ReadInt(&v, &found, `SELECT 1 / 0`)
					}
				},
				func() bool { return tc.proceed && res.Booked },
				func(r *store.Reads) {
					reads++
					r.ConsumeReservation(res.ID, &consumed)
					if tc.failRead && reads == 1 {
						var v int
						var found error
						r.ReadInt(&v, &found, `SELECT 1 / 0`)
					}
				},
				func() (*store.Writes, error) {
					decides++
					// Another connection sees the booking while this transaction is open.
					if err := db.Pool().QueryRow(ctx, `SELECT used FROM quotas WHERE pool_id = $1`, poolID).Scan(&seenUsed); err != nil {
						return nil, err
					}
					if tc.failDecide && decides == 1 {
						return nil, serialization
					}
					if !consumed {
						return nil, fmt.Errorf("reservation %s not consumed", res.ID)
					}
					return nil, nil
				})
			trips := rt.Count() - before
			if ran != tc.wantRan || (err != nil) != tc.wantErr {
				t.Fatalf("ran %v err %v, want ran %v, error %v", ran, err, tc.wantRan, tc.wantErr)
			}
			if aheads != tc.wantAheads || reads != tc.wantReads {
				t.Errorf("read-ahead queued %d times, reads %d; want %d, %d", aheads, reads, tc.wantAheads, tc.wantReads)
			}
			if tc.wantRan && seenUsed != 1 {
				t.Errorf("another connection saw used = %d during the transaction, want 1 (the booking committed)", seenUsed)
			}
			if tc.wantTrips != 0 && trips-int64(decides) != tc.wantTrips {
				// decide's own probe is one round trip of its own.
				t.Errorf("%d round trips besides decide's probes, want %d", trips-int64(decides), tc.wantTrips)
			}
			if used, left := reservationState(t, db); used != tc.wantUsed || left != tc.wantLeft {
				t.Errorf("used %d, reservations left %d; want %d, %d", used, left, tc.wantUsed, tc.wantLeft)
			}
			// The connection went back to the pool outside any transaction.
			var one int
			if err := db.Pool().QueryRow(ctx, `SELECT 1`).Scan(&one); err != nil {
				t.Fatal(err)
			}
		})
	}
}
