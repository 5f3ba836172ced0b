package store_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"better-compute.dev/compute/store"
)

// TestLoadBalancersOutOfStep: the periodic comparison returns the settled load balancers whose
// listed digest differs from the one their last converged pass recorded (or either is missing),
// and the ones whose reach differs from what the instances allow now; never one that is not
// settled, nor one written after the list began; a list older than the age given speaks for
// nothing, while the reach is still compared.
func TestLoadBalancersOutOfStep(t *testing.T) {
	t.Parallel()
	db, tenantID, poolID := bookingEnv(t, 20)
	ctx := context.Background()
	const account, kind = "pacct_resv", "load_balancers"
	same, other := []byte("digest-1"), []byte("digest-2")
	cases := []struct {
		id, state string
		observed  []byte // the row's observed_digest
		listed    []byte // the list's digest of its provider id (nil: not listed)
		reached   string // reached_machine_ids
		newer     bool   // written after the list began
		want      bool
	}{
		{id: "plb_same", state: "ready", observed: same, listed: same, reached: `[]`},
		{id: "plb_drift", state: "ready", observed: same, listed: other, reached: `[]`, want: true},
		{id: "plb_gone", state: "ready", observed: same, reached: `[]`, want: true},
		{id: "plb_unrecorded", state: "ready", listed: same, reached: `[]`, want: true},
		{id: "plb_reach", state: "ready", observed: same, listed: same, reached: `["m-gone"]`, want: true},
		{id: "plb_pending", state: "pending", observed: same, listed: other, reached: `[]`},
		{id: "plb_errored", state: "error", observed: same, listed: other, reached: `[]`},
		{id: "plb_newer", state: "ready", observed: same, listed: other, reached: `[]`, newer: true},
	}
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := db.Pool().Exec(ctx, sql, args...); err != nil {
			t.Fatal(err)
		}
	}
	exec(`INSERT INTO provider_lists (account_id, kind, began_at) VALUES ($1, $2, now() - interval '30 seconds')`, account, kind)
	for _, c := range cases {
		if _, err := store.InsertLoadBalancer(ctx, db.Q(), store.LoadBalancer{ID: c.id, TenantID: tenantID, PoolID: poolID,
			AccountID: account, Name: c.id, Scope: "regional", Region: "nyc3", Spec: []byte(`{"targets":{"pool":true}}`)}); err != nil {
			t.Fatal(err)
		}
		written := "now() - interval '1 minute'"
		if c.newer {
			written = "now()"
		}
		exec(`UPDATE load_balancers SET state = $2, provider_id = 'p-' || id, applied_version = spec_version,
			reached_machine_ids = $3::jsonb, observed_digest = $4, updated_at = `+written+` WHERE id = $1`,
			c.id, c.state, c.reached, c.observed)
		if c.listed != nil {
			exec(`INSERT INTO provider_observations (account_id, kind, provider_id, body, digest) VALUES ($1, $2, $3, '{}', $4)`,
				account, kind, "p-"+c.id, c.listed)
		}
	}
	var want []string
	for _, c := range cases {
		if c.want {
			want = append(want, c.id)
		}
	}
	reachOnly := []string{"plb_reach"}
	slices.Sort(want)

	got, err := store.LoadBalancersOutOfStep(ctx, db.Q(), account, kind, 5*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Errorf("out of step %v, want %v", got, want)
	}
	// The same list, too old to speak: only the reach is compared.
	if got, err = store.LoadBalancersOutOfStep(ctx, db.Q(), account, kind, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, reachOnly) {
		t.Errorf("with an old list: out of step %v, want %v", got, reachOnly)
	}
	accounts, err := store.AccountsWithSettledLoadBalancers(ctx, db.Q())
	if err != nil || !slices.Equal(accounts, []string{account}) {
		t.Errorf("accounts with settled load balancers %v (%v), want [%s]", accounts, err, account)
	}
}
