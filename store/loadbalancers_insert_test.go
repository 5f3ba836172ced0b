package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"better-compute.dev/compute/store"
)

// TestInsertedRowAsRead: the row a two-trip insert reports (built from what was sent, the
// columns' defaults and the server's creation time) is the row a read returns, field for field,
// with and without the optional project and subnet.
func TestInsertedRowAsRead(t *testing.T) {
	t.Parallel()
	db, tenantID, poolID := bookingEnv(t, 1)
	ctx := context.Background()
	if _, err := db.Pool().Exec(ctx, `INSERT INTO projects (id, tenant_id, name) VALUES ('prj_row', $1, 'p')`, tenantID); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, project string }{{"plain", ""}, {"in a project", "prj_row"}} {
		l := store.LoadBalancer{ID: "lb_row_" + tc.project, TenantID: tenantID, ProjectID: tc.project, PoolID: poolID,
			AccountID: "pacct_resv", Name: "row" + tc.project, Description: "d", Scope: "regional", Region: "nyc3",
			Spec: []byte(`{"targets":{"pool":true},"forwarding":[{"entryPort":80}]}`)}
		var written store.LoadBalancer
		if err := store.ExecuteTwoTrips(ctx, db, func(*store.Reads) {}, func() (*store.Writes, error) {
			var w store.Writes
			w.InsertLoadBalancer(l, &written)
			return &w, nil
		}); err != nil {
			t.Fatal(err)
		}
		read, err := store.GetLoadBalancer(ctx, db.Q(), l.ID)
		if err != nil {
			t.Fatal(err)
		}
		if !written.CreatedAt.Equal(read.CreatedAt) || !written.UpdatedAt.Equal(read.UpdatedAt) {
			t.Errorf("%s: times %v / %v written, %v / %v read", tc.name, written.CreatedAt, written.UpdatedAt, read.CreatedAt, read.UpdatedAt)
		}
		// The settings are the JSON sent; a read returns them as the server re-spaced them.
		var sent, stored any
		if json.Unmarshal(written.Spec, &sent) != nil || json.Unmarshal(read.Spec, &stored) != nil || !reflect.DeepEqual(sent, stored) {
			t.Errorf("%s: settings %s written, %s read", tc.name, written.Spec, read.Spec)
		}
		written.CreatedAt, written.UpdatedAt, written.Spec = read.CreatedAt, read.UpdatedAt, read.Spec
		if !reflect.DeepEqual(written, read) {
			t.Errorf("%s: written %+v\nread    %+v", tc.name, written, read)
		}
	}
}

// TestTwinCreateFailsOnTheLiveName: a concurrent twin of a create (same name, same key) sends the
// same fused writes (the load balancer first, then the key's record). Its statement waits at
// the first unique index it meets for the first create's COMMIT and then fails on it:
// load_balancers_live_name, the constraint docs/architecture.md names and core.CreateLoadBalancer answers as
// a replay once it has looked the key up.
func TestTwinCreateFailsOnTheLiveName(t *testing.T) {
	t.Parallel()
	db, tenantID, poolID := bookingEnv(t, 2)
	ctx := context.Background()
	create := func(id string) error {
		l := store.LoadBalancer{ID: id, TenantID: tenantID, PoolID: poolID, AccountID: "pacct_resv", Name: "twin",
			Scope: "regional", Region: "nyc3", Spec: []byte(`{}`)}
		return store.ExecuteLockedTwoTrips(ctx, db, func(*store.Reads) {}, func() (*store.Writes, error) {
			var w store.Writes
			var written store.LoadBalancer
			w.InsertLoadBalancer(l, &written)
			w.RecordIdempotency(store.IdempotencyRecord{TenantID: tenantID, Operation: "create", Key: "k", RequestHash: []byte("h"), ResourceID: id})
			return &w, nil
		})
	}
	// Whether the second's insert waits for the first's COMMIT or comes after it, exactly one
	// commits and the other fails on the live name.
	results := make(chan error, 2)
	for _, id := range []string{"lb_twin_1", "lb_twin_2"} {
		go func() { results <- create(id) }()
	}
	errs := []error{<-results, <-results}
	won := 0
	for _, err := range errs {
		switch {
		case err == nil:
			won++
		case errors.Is(err, store.ErrConflict) && store.ConstraintName(err) == "load_balancers_live_name":
		default:
			t.Errorf("twin: %v (constraint %q), want a conflict on load_balancers_live_name", err, store.ConstraintName(err))
		}
	}
	if won != 1 {
		t.Errorf("%d twins committed, want 1", won)
	}
}
