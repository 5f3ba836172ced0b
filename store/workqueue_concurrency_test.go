package store_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"better-compute.dev/compute/store"
	"better-compute.dev/compute/store/storetest"
)

// TestConcurrentClaimersNeverShareAnItem: several claimers drain one queue at once; every
// item is claimed exactly once (leases are long, nothing expires).
func TestConcurrentClaimersNeverShareAnItem(t *testing.T) {
	t.Parallel()
	q := newQueue(t)
	const items, claimers = 300, 4
	if err := store.ExecuteTx(q.ctx, q.db, func(tx store.Tx) error {
		for i := range items {
			if err := store.Enqueue(q.ctx, tx, kindA, fmt.Sprintf("r%03d", i), nil); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	seen := map[string]string{}
	var problems []string
	var wg sync.WaitGroup
	for c := range claimers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			holder := fmt.Sprintf("h%d", c)
			for {
				leases, err := store.Claim(q.ctx, q.db, store.ClaimParams{Holder: holder, Kinds: []string{kindA}, Limit: 7, LeaseTTL: time.Hour, Now: q.now})
				mu.Lock()
				if err != nil {
					problems = append(problems, err.Error())
				}
				for _, l := range leases {
					if prev, ok := seen[l.ResourceID]; ok {
						problems = append(problems, fmt.Sprintf("%s claimed by %s and %s", l.ResourceID, prev, holder))
					}
					seen[l.ResourceID] = holder
				}
				mu.Unlock()
				if err != nil || len(leases) == 0 {
					return
				}
			}
		}()
	}
	wg.Wait()
	for _, p := range problems {
		t.Error(p)
	}
	if len(seen) != items {
		t.Errorf("%d items claimed, want %d", len(seen), items)
	}
}

// BenchmarkClaimComplete measures one item's trip through the queue on a single connection
// path: its share of a batched Claim (16 a batch) plus its own Complete.
func BenchmarkClaimComplete(b *testing.B) {
	db := storetest.New(b)
	ctx := context.Background()
	if err := store.ExecuteTx(ctx, db, func(tx store.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO work_items (kind, resource_id, due_at)
			SELECT $1, 'r' || g::text, now() - interval '1 second' FROM generate_series(1, $2::int8) AS g`, kindA, b.N)
		return err
	}); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	done := 0
	for done < b.N {
		leases, err := store.Claim(ctx, db, store.ClaimParams{Holder: "bench", Kinds: []string{kindA}, Limit: 16, LeaseTTL: ttl})
		if err != nil {
			b.Fatal(err)
		}
		if len(leases) == 0 {
			b.Fatalf("queue empty after %d of %d", done, b.N)
		}
		for _, l := range leases {
			if err := store.Complete(ctx, db, store.CompleteParams{Lease: l}); err != nil {
				b.Fatal(err)
			}
		}
		done += len(leases)
	}
}
