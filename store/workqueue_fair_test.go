package store_test

import (
	"slices"
	"testing"

	"better-compute.dev/compute/store"
)

// TestClaimIsFairByKindAndGroup: a kind's room bounds what one claim takes of it, and a group's
// bound counts the items the holder already holds, so one tenant's backlog (and its items still
// running) leaves the claim to the other tenants' items and to the other kinds.
func TestClaimIsFairByKindAndGroup(t *testing.T) {
	t.Parallel()
	q := newQueue(t)
	enqueueGroup := func(kind, id, group string) {
		t.Helper()
		if err := store.ExecuteTx(q.ctx, q.db, func(tx store.Tx) error {
			return store.EnqueueGroup(q.ctx, tx, kind, id, group, nil)
		}); err != nil {
			t.Fatal(err)
		}
	}
	// Tenant "a" queued first, so oldest-first alone would hand it every slot.
	for _, id := range []string{"a1", "a2", "a3", "a4"} {
		enqueueGroup(kindA, id, "a")
	}
	enqueueGroup(kindA, "b1", "b")
	for _, id := range []string{"x1", "x2", "x3"} {
		q.enqueue(kindB, id, nil)
	}
	claim := func(limit int) []string {
		t.Helper()
		leases, err := store.Claim(q.ctx, q.db, store.ClaimParams{
			Holder: "r1", Kinds: []string{kindA, kindB}, Limit: limit, LeaseTTL: ttl, Now: q.now,
			KindLimits: map[string]int{kindA: 3, kindB: 2}, GroupLimits: map[string]int{kindA: 2},
		})
		if err != nil {
			t.Fatal(err)
		}
		return names(leases)
	}
	// Kind A: room 3, but tenant a may hold 2, so b1 gets the third; kind B: room 2.
	if got, want := claim(10), []string{"a1", "a2", "b1", "x1", "x2"}; !slices.Equal(got, want) {
		t.Fatalf("first claim %v, want %v", got, want)
	}
	// Tenant a already holds 2: nothing more of it, whatever the room; kind B's last item comes.
	if got, want := claim(10), []string{"x3"}; !slices.Equal(got, want) {
		t.Fatalf("second claim %v, want %v", got, want)
	}
	// Another holder holds none of tenant a's items: its bound starts afresh.
	other, err := store.Claim(q.ctx, q.db, store.ClaimParams{Holder: "r2", Kinds: []string{kindA}, Limit: 10, LeaseTTL: ttl,
		Now: q.now, GroupLimits: map[string]int{kindA: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if got := names(other); !slices.Equal(got, []string{"a3"}) {
		t.Fatalf("other holder claimed %v, want [a3]", got)
	}
	// A kind with no room is not claimed at all.
	none, err := store.Claim(q.ctx, q.db, store.ClaimParams{Holder: "r3", Kinds: []string{kindA}, Limit: 10, LeaseTTL: ttl,
		Now: q.now, KindLimits: map[string]int{kindA: 0}})
	if err != nil || len(none) != 0 {
		t.Fatalf("claim of a kind without room: %v %v", names(none), err)
	}
}

// names are the resource ids of leases, sorted.
func names(leases []store.Lease) []string {
	out := make([]string, len(leases))
	for i, l := range leases {
		out[i] = l.ResourceID
	}
	slices.Sort(out)
	return out
}
