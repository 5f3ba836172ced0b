package store_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"better-compute.dev/compute/store"
	"better-compute.dev/compute/store/storetest"
)

// TestBudgetSharedAcrossPools: two pools (as two replicas) draw on one token's bucket; together
// they never get more than its capacity at once, a low-priority taker leaves the reserve, a
// block stops every taker, and each lease is one round trip.
func TestBudgetSharedAcrossPools(t *testing.T) {
	ctx := context.Background()
	schema := storetest.NewSchema(t)
	a := schema.DB
	b, err := store.Open(ctx, schema.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	// A refill too slow to matter inside the test: the grants are the capacity alone.
	p := store.BudgetParams{Key: "k1", Capacity: 10, PerSecond: 0.001, Want: 4}
	var mu sync.Mutex
	total := 0
	var wg sync.WaitGroup
	for _, db := range []*store.DB{a, b, a, b, a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l, err := db.TakeBudget(ctx, p)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			total += l.Granted
			mu.Unlock()
		}()
	}
	wg.Wait()
	if total != 10 {
		t.Errorf("six takers of 4 were granted %d in all, want the capacity 10", total)
	}

	low := store.BudgetParams{Key: "k2", Capacity: 10, PerSecond: 0.001, Want: 8, Reserve: 5}
	l, err := a.TakeBudget(ctx, low)
	if err != nil || l.Granted != 5 {
		t.Errorf("low priority on a full bucket: %+v %v, want 5 granted (5 kept in reserve)", l, err)
	}
	if l, err = b.TakeBudget(ctx, low); err != nil || l.Granted != 0 {
		t.Errorf("low priority at the reserve: %+v %v, want nothing", l, err)
	}
	if l, err = b.TakeBudget(ctx, store.BudgetParams{Key: "k2", Capacity: 10, PerSecond: 0.001, Want: 8}); err != nil || l.Granted != 5 {
		t.Errorf("normal priority takes the reserve: %+v %v, want 5", l, err)
	}

	if _, err := a.TakeBudget(ctx, store.BudgetParams{Key: "k3", Capacity: 10, PerSecond: 100, Want: 1}); err != nil {
		t.Fatal(err)
	}
	until := time.Now().Add(time.Hour)
	if err := b.BlockBudget(ctx, "k3", until); err != nil {
		t.Fatal(err)
	}
	l, err = a.TakeBudget(ctx, store.BudgetParams{Key: "k3", Capacity: 10, PerSecond: 100, Want: 1})
	if err != nil || l.Granted != 0 || l.BlockedUntil.Before(until.Add(-time.Second)) {
		t.Errorf("blocked bucket: %+v %v, want nothing until %s", l, err, until)
	}

	var rt storetest.RoundTrips
	traced, err := store.Open(store.WithTracer(ctx, &rt), schema.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer traced.Close()
	before := rt.Count()
	if _, err := traced.TakeBudget(ctx, store.BudgetParams{Key: "k4", Capacity: 10, PerSecond: 1, Want: 3}); err != nil {
		t.Fatal(err)
	}
	if n := rt.Count() - before; n != 1 {
		t.Errorf("a lease took %d round trips, want 1", n)
	}
}
