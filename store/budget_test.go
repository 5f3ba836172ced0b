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
			l, err := store.TakeBudget(ctx, db, p)
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
	l, err := store.TakeBudget(ctx, a, low)
	if err != nil || l.Granted != 5 {
		t.Errorf("low priority on a full bucket: %+v %v, want 5 granted (5 kept in reserve)", l, err)
	}
	if l, err = store.TakeBudget(ctx, b, low); err != nil || l.Granted != 0 {
		t.Errorf("low priority at the reserve: %+v %v, want nothing", l, err)
	}
	if l, err = store.TakeBudget(ctx, b, store.BudgetParams{Key: "k2", Capacity: 10, PerSecond: 0.001, Want: 8}); err != nil || l.Granted != 5 {
		t.Errorf("normal priority takes the reserve: %+v %v, want 5", l, err)
	}

	if _, err := store.TakeBudget(ctx, a, store.BudgetParams{Key: "k3", Capacity: 10, PerSecond: 100, Want: 1}); err != nil {
		t.Fatal(err)
	}
	until := time.Now().Add(time.Hour)
	if err := store.BlockBudget(ctx, b, "k3", until); err != nil {
		t.Fatal(err)
	}
	l, err = store.TakeBudget(ctx, a, store.BudgetParams{Key: "k3", Capacity: 10, PerSecond: 100, Want: 1})
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
	if _, err := store.TakeBudget(ctx, traced, store.BudgetParams{Key: "k4", Capacity: 10, PerSecond: 1, Want: 3}); err != nil {
		t.Fatal(err)
	}
	if n := rt.Count() - before; n != 1 {
		t.Errorf("a lease took %d round trips, want 1", n)
	}
}

// TestProviderListsShared: one claim per interval across pools (replicas); a recorded list
// writes only the rows that changed and drops those gone; a list older than the recorded one
// is refused; a reader sees the last recorded list and whether it speaks for a row.
func TestProviderListsShared(t *testing.T) {
	ctx := context.Background()
	schema := storetest.NewSchema(t)
	a := schema.DB
	b, err := store.Open(ctx, schema.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, err := a.Pool().Exec(ctx, `INSERT INTO tenants (id) VALUES ('t1')`); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Pool().Exec(ctx, `INSERT INTO provider_accounts (id, tenant_id, kind, name, token_sealed) VALUES ('acct1', 't1', 'digitalocean', 'main', '\x00')`); err != nil {
		t.Fatal(err)
	}

	// Six replicas race for the claim: one wins.
	var mu sync.Mutex
	var wins []time.Time
	var wg sync.WaitGroup
	for _, db := range []*store.DB{a, b, a, b, a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			began, ok, err := store.ClaimProviderList(ctx, db, "acct1", "load_balancers", 10*time.Second)
			if err != nil {
				t.Error(err)
			}
			if ok {
				mu.Lock()
				wins = append(wins, began)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(wins) != 1 {
		t.Fatalf("%d replicas claimed one list, want 1", len(wins))
	}
	began := wins[0]
	items := []store.Listed{{ProviderID: "p1", Body: []byte(`{"s":"new"}`)}, {ProviderID: "p2", Body: []byte(`{"s":"new"}`)}}
	if ok, err := store.RecordProviderList(ctx, b, "acct1", "load_balancers", began, time.Second, items); err != nil || !ok {
		t.Fatalf("record: %v %v", ok, err)
	}
	if _, ok, _ := store.ClaimProviderList(ctx, a, "acct1", "load_balancers", 10*time.Second); ok {
		t.Error("claimed again within the interval")
	}
	o, err := store.ProviderObservation(ctx, a, "acct1", "load_balancers", "p1")
	if err != nil || string(o.Body) != `{"s":"new"}` || !o.Began.Equal(began) {
		t.Errorf("observation of p1: %+v %v", o, err)
	}

	time.Sleep(1100 * time.Millisecond) // past the interval, with room for a loaded machine between the record and the claim above
	next, ok, err := store.ClaimProviderList(ctx, b, "acct1", "load_balancers", 10*time.Second)
	if err != nil || !ok {
		t.Fatalf("no claim after the interval: %v %v", ok, err)
	}
	items = []store.Listed{{ProviderID: "p1", Body: []byte(`{"s":"active"}`)}}
	if ok, err := store.RecordProviderList(ctx, a, "acct1", "load_balancers", next, time.Second, items); err != nil || !ok {
		t.Fatalf("record: %v %v", ok, err)
	}
	if ok, err := store.RecordProviderList(ctx, a, "acct1", "load_balancers", began, time.Second, items[:0]); err != nil || ok {
		t.Errorf("an older list was recorded over a newer one: %v %v", ok, err)
	}
	if o, _ := store.ProviderObservation(ctx, b, "acct1", "load_balancers", "p1"); string(o.Body) != `{"s":"active"}` {
		t.Errorf("p1 after the second list: %q", o.Body)
	}
	if o, _ := store.ProviderObservation(ctx, b, "acct1", "load_balancers", "p2"); o.Body != nil || !o.Began.Equal(next) {
		t.Errorf("p2, gone from the second list: %+v", o)
	}
	if o, _ := store.ProviderObservation(ctx, b, "acct1", "load_balancers", "p9"); o.Body != nil || o.Age <= 0 {
		t.Errorf("p9, never listed: %+v", o)
	}

	// A row whose body did not change is not rewritten (its row version stays).
	version := func(id string) string {
		var x string
		if err := a.Pool().QueryRow(ctx, `SELECT xmin::text FROM provider_observations WHERE provider_id = $1`, id).Scan(&x); err != nil {
			t.Fatal(err)
		}
		return x
	}
	before := version("p1")
	time.Sleep(1100 * time.Millisecond)
	third, ok, err := store.ClaimProviderList(ctx, a, "acct1", "load_balancers", 10*time.Second)
	if err != nil || !ok {
		t.Fatalf("no third claim: %v %v", ok, err)
	}
	items = append(items, store.Listed{ProviderID: "p3", Body: []byte(`{"s":"new"}`)})
	if ok, err := store.RecordProviderList(ctx, b, "acct1", "load_balancers", third, time.Second, items); err != nil || !ok {
		t.Fatalf("record: %v %v", ok, err)
	}
	if after := version("p1"); after != before {
		t.Errorf("unchanged p1 was rewritten (xmin %s -> %s)", before, after)
	}
	if o, _ := store.ProviderObservation(ctx, a, "acct1", "load_balancers", "p3"); string(o.Body) != `{"s":"new"}` {
		t.Errorf("p3 after the third list: %q", o.Body)
	}
}
