package core

import (
	"errors"
	"testing"

	"better-compute.dev/compute/store"
	"better-compute.dev/compute/store/storetest"
)

// TestOwnedTables: every table of tableOf (the one list of owned tables) exists with an id and
// a tenant_id, so that store.OwnerOf answers ErrNotFound for a missing row rather than a SQL error.
func TestOwnedTables(t *testing.T) {
	db := storetest.New(t)
	for typ, table := range tableOf {
		if _, err := store.OwnerOf(t.Context(), db.Q(), table, "missing"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s (%s): %v, want ErrNotFound", typ, table, err)
		}
	}
	if _, err := store.OwnerOf(t.Context(), db.Q(), `load_balancers" --`, "missing"); err == nil || errors.Is(err, store.ErrNotFound) {
		t.Errorf("a table name that is not a table: %v, want an error", err)
	}
}
