// Package roundtrips counts the database round trips of each call through a whole replica (the
// JSON mapping over HTTP, authentication, OpenFGA, core, the store) with a pgx tracer, and fails
// when a call needs more than its budget. Counts, not timings: at tens of milliseconds between
// a replica and CockroachDB, a call's latency is its sequential round trips.
package roundtrips

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"better-compute.dev/compute/app"
	"better-compute.dev/compute/app/apptest"
	"better-compute.dev/compute/core"
	"better-compute.dev/compute/seal"
	"better-compute.dev/compute/store"
	"better-compute.dev/compute/store/storetest"
)

// budgets are the counts in dev configuration (OpenFGA on its memory datastore), principal and
// authorization answers cached as in a conversation: a create is one transaction of two round
// trips (store.ExecuteTwoTrips); an update or delete reads the row's owner for the prologue, then
// runs the same two-trip transaction. A list's count does not grow with its items. A regression
// fails; lower them when the path gets cheaper.
var budgets = map[string]int64{
	"create": 3, "get": 1, "list of 1": 1, "list of 20": 1, "update": 3, "delete": 3,
}

// startReplica runs a replica on schema (a second one on the same schema is another replica of
// the same deployment, with datastore "postgres"), counting its round trips on rt when given.
// datastore is OpenFGA's: "memory" (dev) or "postgres" (serve: on the same database).
func startReplica(t *testing.T, schema *storetest.Schema, datastore string, rt *storetest.RoundTrips) *apptest.Stack {
	t.Helper()
	key, err := seal.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	startCtx := ctx
	if rt != nil {
		startCtx = store.WithTracer(ctx, rt)
	}
	a, err := app.Start(startCtx, app.Config{
		Listen: "127.0.0.1:0", DatabaseURL: schema.URL, SealKey: key.Encode(), OpenFGADatastore: datastore, Replica: "rt",
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close(context.Background()) })
	adminID, token, err := a.Service.BootstrapAdmin(ctx, "rt-admin")
	if err != nil {
		t.Fatal(err)
	}
	return &apptest.Stack{App: a, Schema: schema, AdminToken: token, HTTP: &http.Client{Timeout: 30 * time.Second},
		AdminCtx: core.WithCaller(ctx, core.Caller{PrincipalID: adminID, PlatformAdmin: true})}
}

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
		before := rt.Count()
		status, out := s.PostJSON(t, "/api/compute/"+path, tn.Token, body)
		n := rt.Count() - before
		if status != http.StatusOK {
			t.Fatalf("%s: HTTP %d %v", name, status, out)
		}
		t.Logf("%-11s %2d round trips (budget %d)", name, n, budgets[name])
		if n > budgets[name] {
			t.Errorf("%s took %d round trips, budget %d", name, n, budgets[name])
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

	out := counted("create", "loadBalancers/create", createBody(0))
	id := out["loadBalancer"].(map[string]any)["id"].(string)
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
