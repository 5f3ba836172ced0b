package store_test

import (
	"context"
	"testing"
	"time"

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

// reserveAsBefore books a unit the way replicas of the previous version did: the quota row
// incremented and a reservation row inserted, in one statement.
func reserveAsBefore(t *testing.T, db *store.DB, tenantID, poolID, id string) {
	t.Helper()
	if _, err := db.Pool().Exec(context.Background(), `WITH booked AS (
		UPDATE quotas SET used = used + 1 WHERE pool_id = $1 AND tenant_id = $2 AND resource = 'loadBalancers' AND used < quota_limit
		RETURNING pool_id)
		INSERT INTO quota_reservations (id, pool_id, tenant_id, resource) SELECT $3, pool_id, $2, 'loadBalancers' FROM booked`,
		poolID, tenantID, id); err != nil {
		t.Fatal(err)
	}
}

// TestStaleReservationsAreRefunded: a reservation a replica of the previous version left behind
// (it died between booking and commit) is given back by the sweep once older than the lifetime,
// and not before.
func TestStaleReservationsAreRefunded(t *testing.T) {
	t.Parallel()
	db := storetest.New(t)
	ctx := context.Background()
	tenantID, poolID := reservationQuota(t, db, 5)
	reserveAsBefore(t, db, tenantID, poolID, "qres_old")
	reserveAsBefore(t, db, tenantID, poolID, "qres_new")
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
