package store_test

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"better-compute.dev/compute/store"
	"better-compute.dev/compute/store/storetest"
)

// TestSharedReadNeverSkipsALateCommit: writers of two tenants append events in transactions that
// commit after random pauses, while shared readers (ReadEventRanges over both tenants, in either
// order, as two replicas would) and per-tenant readers (ListEvents) follow them by cursor at the
// same time, numbering concurrently. Every reader must see each tenant's seqs 1..N in order with
// no gap and every committed event exactly once.
func TestSharedReadNeverSkipsALateCommit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := storetest.New(t)
	tenants := []string{"tn-feed-a", "tn-feed-b"}
	const writers, perWriter = 4, 25
	var done atomic.Bool
	wg := appendLate(t, db, writers, perWriter, func() []string { return tenants[:1+rand.IntN(2)] })
	// seen[reader][tenant] lists the seqs a reader received, in order.
	type seen map[string][]int64
	shared := func(order []string) seen {
		got := seen{}
		cursors := map[string]int64{}
		for {
			last := done.Load()
			ranges := make([]store.EventRange, len(order))
			for i, tn := range order {
				ranges[i] = store.EventRange{TenantID: tn, After: cursors[tn]}
			}
			feed, err := store.ReadEventRanges(ctx, db, ranges, 20)
			if err != nil {
				t.Error(err)
				return got
			}
			n := 0
			for i, evs := range feed.Events {
				for _, e := range evs {
					if e.TenantID != order[i] {
						t.Errorf("range of %s returned an event of %s", order[i], e.TenantID)
					}
					got[e.TenantID] = append(got[e.TenantID], e.Seq)
					cursors[e.TenantID] = e.Seq
					n++
				}
			}
			if last && n == 0 && !feed.MoreToNumber {
				return got
			}
		}
	}
	single := func(tn string) seen {
		got := seen{}
		var cursor int64
		for {
			last := done.Load()
			evs, err := store.ListEvents(ctx, db.Q(), tn, cursor, 20, "")
			if err != nil {
				t.Error(err)
				return got
			}
			for _, e := range evs {
				got[tn] = append(got[tn], e.Seq)
				cursor = e.Seq
			}
			if last && len(evs) == 0 {
				return got
			}
		}
	}
	readers := []func() seen{
		func() seen { return shared(tenants) },
		func() seen { return shared([]string{tenants[1], tenants[0]}) },
		func() seen { return single(tenants[0]) },
		func() seen { return single(tenants[1]) },
	}
	results := make([]seen, len(readers))
	var rwg sync.WaitGroup
	for i, read := range readers {
		rwg.Add(1)
		go func() { defer rwg.Done(); results[i] = read() }()
	}
	wg.Wait()
	done.Store(true)
	rwg.Wait()
	var total = map[string]int64{}
	for _, tn := range tenants {
		var n int64
		if err := db.Q().QueryRow(ctx, `SELECT count(*) FROM events WHERE tenant_id = $1`, tn).Scan(&n); err != nil {
			t.Fatal(err)
		}
		total[tn] = n
	}
	if total[tenants[0]] < writers*perWriter {
		t.Fatalf("%s has %d events, want at least %d", tenants[0], total[tenants[0]], writers*perWriter)
	}
	for r, got := range results {
		if want := 1 + btoi(r < 2); len(got) != want {
			t.Errorf("reader %d saw events of %d tenants, want %d", r, len(got), want)
		}
		for tn, seqs := range got {
			if int64(len(seqs)) != total[tn] {
				t.Errorf("reader %d saw %d events of %s, want %d", r, len(seqs), tn, total[tn])
			}
			for i, s := range seqs {
				if s != int64(i+1) {
					t.Fatalf("reader %d: event %d of %s has seq %d, want %d (a gap or a repeat)", r, i, tn, s, i+1)
				}
			}
		}
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
