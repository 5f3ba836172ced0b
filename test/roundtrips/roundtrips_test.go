// Package roundtrips counts the database round trips of each call through a whole replica (the
// JSON mapping over HTTP, authentication, OpenFGA, core, the store) with a pgx tracer, and fails
// when a call needs more than its budget. Counts, not timings: at tens of milliseconds between
// a replica and CockroachDB, a call's latency is its sequential round trips.
package roundtrips

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"better-compute.dev/compute/app"
	"better-compute.dev/compute/app/apptest"
	"better-compute.dev/compute/store"
	"better-compute.dev/compute/store/storetest"
	"better-compute.dev/compute/testwait"
)

// budgets are the counts in dev configuration (OpenFGA on its memory datastore), principal and
// authorization answers cached as in a conversation: a create is two round trips
// (store.ExecuteLockedTwoTrips); an update or delete reads the row's owner for the prologue, then
// runs the same two-trip transaction. A replay (a create whose key has a live record) rolls its
// transaction back and reads the load balancer the record names, which a create without one
// never pays for. A list's count does not grow with its items. A regression fails; lower them
// when the path gets cheaper.
var budgets = map[string]int64{
	"create": 2, "replay": 3, "get": 1, "list of 1": 1, "list of 20": 1, "update": 3, "delete": 3,
}

// startReplica runs a replica on schema (a second one on the same schema is another replica of
// the same deployment, with datastore "postgres"), counting its round trips on rt when given.
// datastore is OpenFGA's: "memory" (dev) or "postgres" (serve: on the same database).
func startReplica(t *testing.T, schema *storetest.Schema, datastore string, rt *storetest.RoundTrips) *apptest.Stack {
	t.Helper()
	return startReplicaAt(t, schema, schema.URL, datastore, rt)
}

// startReplicaAt is startReplica with the database reached at databaseURL (a proxy in front of
// schema's server).
func startReplicaAt(t *testing.T, schema *storetest.Schema, databaseURL, datastore string, rt *storetest.RoundTrips) *apptest.Stack {
	t.Helper()
	ctx := context.Background()
	if rt != nil {
		ctx = store.WithTracer(ctx, rt)
	}
	return apptest.StartOn(ctx, t, schema, databaseURL, func(c *app.Config) { c.OpenFGADatastore, c.Replica = datastore, "rt" })
}

// statementBudgets bound the statements a call sends, batched or not: each has a fixed cost on
// the server (bind, executor start and end, snapshot), which bounds what one database serves.
// A create: BEGIN, whether a quota unit is free, the idempotency lookup (with its expired record
// dropped), the pool; the fused inserts, the unit taken, COMMIT (store.ExecuteLockedTwoTrips).
// A replay: the same reads, ROLLBACK and the load balancer its record names.
var statementBudgets = map[string]int64{"create": 7, "replay": 6, "get": 1, "list of 1": 1, "list of 20": 1, "update": 12, "delete": 7}

func TestRoundTripsPerCall(t *testing.T) {
	rt := &storetest.RoundTrips{}
	s := startReplica(t, storetest.NewSchema(t), "memory", rt)
	tn := s.NewTenant(t, "rt", "editor")
	pool := s.NewPool(t, tn.ID, tn.AccountID, "big", 1000)

	counted := func(name string, path string, body map[string]any) map[string]any {
		t.Helper()
		// An authenticated call just before keeps the token in the replica's principal cache
		// (core.PrincipalCacheTTL), as it is for a client in a conversation: the counted call
		// then shows its own round trips, not a cache refill.
		s.PostJSON(t, "/api/compute/events/list", tn.Token, map[string]any{"tenantId": tn.ID})
		before, beforeStatements := rt.Count(), rt.Statements()
		status, out := s.PostJSON(t, "/api/compute/"+path, tn.Token, body)
		n, statements := rt.Count()-before, rt.Statements()-beforeStatements
		if status != http.StatusOK {
			t.Fatalf("%s: HTTP %d %v", name, status, out)
		}
		t.Logf("%-11s %2d round trips (budget %d), %2d statements", name, n, budgets[name], statements)
		if n > budgets[name] {
			t.Errorf("%s took %d round trips, budget %d", name, n, budgets[name])
		}
		if budget, ok := statementBudgets[name]; ok && statements > budget {
			t.Errorf("%s sent %d statements, budget %d", name, statements, budget)
		}
		return out
	}
	createBody := func(i int) map[string]any {
		return map[string]any{"tenantId": tn.ID, "poolId": pool, "name": fmt.Sprintf("lb-%d", i), "region": "nyc3",
			"targets":        map[string]any{"pool": true},
			"forwarding":     []any{map[string]any{"entryProtocol": "http", "entryPort": 80, "targetProtocol": "http", "targetPort": 8080}},
			"idempotencyKey": fmt.Sprintf("rt-%d", i)}
	}
	// A first call warms what a replica caches (prepared statements, the principal's platform
	// grant) so that the counts are those of a replica in service.
	s.PostJSON(t, "/api/compute/loadBalancers/create", tn.Token, createBody(-1))
	// The replica's first read of the credential version sets the principal cache's baseline and
	// forgets what was cached before it; counting starts after it, or that read's forgetting can
	// land inside a counted call and show up as a principal lookup.
	testwait.Until(t, 10*time.Second, "the principal cache's first credential version read", func() (bool, string) {
		n := s.App.Base.CredentialVersionReads()
		return n > 0, fmt.Sprintf("%d reads", n)
	})

	out := counted("create", "loadBalancers/create", createBody(0))
	id := out["loadBalancer"].(map[string]any)["id"].(string)
	if again := counted("replay", "loadBalancers/create", createBody(0)); again["loadBalancer"].(map[string]any)["id"] != id {
		t.Fatalf("the replay answered %v, want %s", again, id)
	}
	counted("get", "loadBalancers/get", map[string]any{"tenantId": tn.ID, "loadBalancerId": id})
	counted("list of 1", "loadBalancers/list", map[string]any{"tenantId": tn.ID, "poolId": pool})
	for i := 1; i < 20; i++ {
		if status, out := s.PostJSON(t, "/api/compute/loadBalancers/create", tn.Token, createBody(i)); status != http.StatusOK {
			t.Fatalf("create %d: %v", i, out)
		}
	}
	counted("list of 20", "loadBalancers/list", map[string]any{"tenantId": tn.ID, "poolId": pool})
	counted("update", "loadBalancers/update", map[string]any{"tenantId": tn.ID, "loadBalancerId": id, "redirectHttpToHttps": true})
	counted("delete", "loadBalancers/delete", map[string]any{"tenantId": tn.ID, "loadBalancerId": id})
}

// serveBudgets are the wire round trips of each call in serve configuration: the OpenFGA engine
// keeps its tuples in the same PostgreSQL, and the counting happens on the wire, so the engine's
// own pool is counted with the store's. Calls are measured in a conversation (the same call made
// just before), so principal and authorization answers come from the replica's bounded caches
// (core.PrincipalCacheTTL, authz.DecisionTTL) and a call pays only its own statements.
var serveBudgets = map[string]int64{
	"create": 2, "get": 1, "list of 1": 2, "list of 50": 2, "update": 3, "delete": 3,
}

// TestRoundTripsPerCallServe counts wire round trips per call with OpenFGA on the database,
// and asserts a list's count does not grow with its length.
func TestRoundTripsPerCallServe(t *testing.T) {
	schema := storetest.NewSchema(t)
	turns, proxied := storetest.NewWireTurns(t, schema.URL)
	// The turns of the call being counted, shown when it is over budget.
	var counting atomic.Bool
	var seenMu sync.Mutex
	var seen []string
	turns.Debug = func(conn string, b []byte) {
		if counting.Load() {
			seenMu.Lock()
			seen = append(seen, fmt.Sprintf("conn %s: %q", conn, b[:min(len(b), 100)]))
			seenMu.Unlock()
		}
	}
	s := startReplicaAt(t, schema, proxied, "postgres", nil)
	tn := s.NewTenant(t, "rts", "editor")
	pool := s.NewPool(t, tn.ID, tn.AccountID, "big", 1000)
	createBody := func(i int) map[string]any {
		return map[string]any{"tenantId": tn.ID, "poolId": pool, "name": fmt.Sprintf("lb-%d", i), "region": "nyc3",
			"targets":        map[string]any{"pool": true},
			"forwarding":     []any{map[string]any{"entryProtocol": "http", "entryPort": 80, "targetProtocol": "http", "targetPort": 8080}},
			"idempotencyKey": fmt.Sprintf("rts-%d", i)}
	}
	call := func(path string, body map[string]any) (int64, map[string]any) {
		t.Helper()
		seenMu.Lock()
		seen = nil
		seenMu.Unlock()
		before := turns.Count()
		counting.Store(true)
		status, out := s.PostJSON(t, "/api/compute/"+path, tn.Token, body)
		n := turns.Count() - before
		counting.Store(false)
		if status != http.StatusOK {
			t.Fatalf("%s: HTTP %d %v", path, status, out)
		}
		return n, out
	}
	check := func(name string, n int64) {
		t.Helper()
		t.Logf("%-11s %2d wire round trips (budget %d)", name, n, serveBudgets[name])
		if n > serveBudgets[name] {
			seenMu.Lock()
			t.Errorf("%s took %d wire round trips in serve configuration, budget %d:\n%s", name, n, serveBudgets[name], strings.Join(seen, "\n"))
			seenMu.Unlock()
		}
	}
	cold, _ := call("loadBalancers/create", createBody(-1))
	t.Logf("first create of the conversation (caches cold) %d wire round trips", cold)
	// fewest is the fewest round trips of three consecutive calls: a call that lands just as the
	// replica's decision cache entry expires (authz.DecisionTTL, the staleness bound) pays one
	// engine check on top, by design; a regression makes every call cost more.
	fewest := func(name string, f func(i int) int64) {
		t.Helper()
		best := int64(1 << 62)
		for i := range 3 {
			best = min(best, f(i))
		}
		check(name, best)
	}
	var ids []string
	fewest("create", func(i int) int64 {
		n, out := call("loadBalancers/create", createBody(i))
		ids = append(ids, out["loadBalancer"].(map[string]any)["id"].(string))
		return n
	})
	get := map[string]any{"tenantId": tn.ID, "loadBalancerId": ids[0]}
	fewest("get", func(int) int64 { n, _ := call("loadBalancers/get", get); return n })
	list := map[string]any{"tenantId": tn.ID, "poolId": pool}
	fewest("list of 1", func(int) int64 { n, _ := call("loadBalancers/list", list); return n })
	for i := 3; i < 50; i++ {
		call("loadBalancers/create", createBody(i))
	}
	fewest("list of 50", func(int) int64 { n, _ := call("loadBalancers/list", list); return n })
	// Every update changes the load balancer (the flag toggles), so each runs the same statements.
	fewest("update", func(i int) int64 {
		n, _ := call("loadBalancers/update", map[string]any{"tenantId": tn.ID, "loadBalancerId": ids[0], "redirectHttpToHttps": i%2 == 0})
		return n
	})
	fewest("delete", func(i int) int64 {
		n, _ := call("loadBalancers/delete", map[string]any{"tenantId": tn.ID, "loadBalancerId": ids[i]})
		return n
	})
}
