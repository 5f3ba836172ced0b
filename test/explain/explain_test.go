// Package explain checks the plans of the statements a large deployment runs most: every
// statement the request path sends (create, replay, get, list, update, delete), the work queue's
// claim, the periodic safety net (the per-account comparison and the unqueued sweep) and the
// retention passes' prunes is recorded as it runs against a schema loaded with enough rows that
// the planner prefers indexes, then explained with its own arguments. A sequential scan of a
// table that grows with the fleet (load balancers, events and their inbox, work items,
// idempotency records, usage, quotas) fails the test: such a statement costs what the table
// holds, not what the call needs.
package explain

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"better-compute.dev/compute/app/apptest"
	"better-compute.dev/compute/contract"
	"better-compute.dev/compute/reconcile"
	"better-compute.dev/compute/store"
	"better-compute.dev/compute/store/storetest"
)

// growing are the tables whose size follows the fleet or its history.
var growing = map[string]bool{"load_balancers": true, "events": true, "event_inbox": true, "work_items": true,
	"idempotency_keys": true, "usage_records": true, "quotas": true}

// statement is one statement a call sent, with its arguments.
type statement struct {
	call string
	sql  string
	args []any
}

// recorder keeps the statements sent while it is on (a store.Tracer on every connection).
type recorder struct {
	store.NoTracer
	mu   sync.Mutex
	on   string // the call being recorded, "" for none
	seen []statement
}

func (r *recorder) record(sql string, args []any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.on != "" {
		r.seen = append(r.seen, statement{call: r.on, sql: sql, args: append([]any(nil), args...)})
	}
}

func (r *recorder) during(call string, f func()) {
	r.mu.Lock()
	r.on = call
	r.mu.Unlock()
	f()
	r.mu.Lock()
	r.on = ""
	r.mu.Unlock()
}

func (r *recorder) StatementStart(ctx context.Context, sql string, args []any) context.Context {
	r.record(sql, args)
	return ctx
}
func (r *recorder) BatchStatement(_ context.Context, sql string, args []any, _ error) {
	r.record(sql, args)
}

// explainable matches the statements EXPLAIN takes (not BEGIN, COMMIT, SET and the like).
var explainable = regexp.MustCompile(`(?is)^\s*(SELECT|INSERT|UPDATE|DELETE|WITH)\b`)

func TestNoSequentialScansOfGrowingTables(t *testing.T) {
	if testing.Short() {
		t.Skip("loads a large schema")
	}
	schema := storetest.NewSchema(t)
	rec := &recorder{}
	s := start(t, schema, rec)
	tn := s.NewTenant(t, "explain", "editor")
	ctx := context.Background()
	q := s.App.DB.Q()

	lbBody := func(name, key string) map[string]any {
		return map[string]any{
			"tenantId": tn.ID, "poolId": tn.PoolID, "name": name, "region": "nyc3", "targets": map[string]any{"pool": true},
			"forwarding":     []any{map[string]any{"entryProtocol": "http", "entryPort": 80, "targetProtocol": "http", "targetPort": 8080}},
			"idempotencyKey": key,
		}
	}
	// The template rows the load copies: a load balancer with its event, work item and
	// idempotency record, made through the API.
	status, got := s.PostJSON(t, "/api/compute/loadBalancers/create", tn.Token, lbBody("template", "template"))
	if status != http.StatusOK {
		t.Fatalf("create the template: %d %v", status, got)
	}
	template := got["loadBalancer"].(map[string]any)["id"].(string)
	// Reading the events numbers the ones still in the inbox, so the template event is in events.
	if status, got := s.PostJSON(t, "/api/compute/events/list", tn.Token, map[string]any{"tenantId": tn.ID}); status != http.StatusOK {
		t.Fatalf("events: %d %v", status, got)
	}
	load(t, q, tn.ID, template)

	var created string
	rec.during("create", func() {
		status, got = s.PostJSON(t, "/api/compute/loadBalancers/create", tn.Token, lbBody("probe", "probe"))
		if status != http.StatusOK {
			t.Fatalf("create: %d %v", status, got)
		}
		created = got["loadBalancer"].(map[string]any)["id"].(string)
	})
	calls := []struct {
		name, path string
		body       map[string]any
	}{
		{"replay", "/api/compute/loadBalancers/create", lbBody("probe", "probe")},
		{"get", "/api/compute/loadBalancers/get", map[string]any{"tenantId": tn.ID, "loadBalancerId": created}},
		{"list", "/api/compute/loadBalancers/list", map[string]any{"tenantId": tn.ID, "pageSize": 20}},
		{"update", "/api/compute/loadBalancers/update", map[string]any{"tenantId": tn.ID, "loadBalancerId": created, "redirectHttpToHttps": true}},
		{"events", "/api/compute/events/list", map[string]any{"tenantId": tn.ID, "resourceId": created}},
		{"delete", "/api/compute/loadBalancers/delete", map[string]any{"tenantId": tn.ID, "loadBalancerId": created}},
	}
	for _, c := range calls {
		rec.during(c.name, func() {
			if status, got := s.PostJSON(t, c.path, tn.Token, c.body); status != http.StatusOK {
				t.Fatalf("%s: %d %v", c.name, status, got)
			}
		})
	}
	rec.during("claim", func() {
		if _, err := store.Claim(ctx, s.App.DB, store.ClaimParams{Holder: "explain", Kinds: []string{contract.VPSKind}, Limit: 10, LeaseTTL: time.Minute}); err != nil {
			t.Fatal(err)
		}
	})
	// The periodic safety net's statements: the accounts it compares, the per-account comparison
	// against the shared provider list, and the sweep for resources left without work.
	rec.during("periodic", func() {
		if _, err := store.AccountsWithSettledLoadBalancers(ctx, q); err != nil {
			t.Fatal(err)
		}
		if _, err := store.LoadBalancersOutOfStep(ctx, q, tn.AccountID, "load_balancers", time.Minute); err != nil {
			t.Fatal(err)
		}
		if _, err := store.FindAllUnqueued(ctx, q, contract.WorkKinds, 100); err != nil {
			t.Fatal(err)
		}
		if _, err := store.CountUnqueued(ctx, q, contract.WorkKinds); err != nil {
			t.Fatal(err)
		}
	})
	// The retention passes' statements, as reconcile.Prune sends them (every loaded row is
	// younger than the hour kept, so nothing goes; the plans are what counts).
	rec.during("retention", func() {
		for _, kind := range store.RetainedKinds {
			if _, _, err := store.PruneBatch(ctx, q, store.PruneBatchParams{Kind: kind, Keep: time.Hour, Limit: reconcile.PruneBatch}); err != nil {
				t.Fatal(err)
			}
		}
	})

	explained := 0
	for _, st := range rec.seen {
		if !explainable.MatchString(st.sql) {
			continue
		}
		var plan []map[string]any
		var raw []byte
		if err := q.QueryRow(ctx, "EXPLAIN (FORMAT JSON) "+st.sql, st.args...).Scan(&raw); err != nil {
			t.Errorf("%s: EXPLAIN %s: %v", st.call, oneLine(st.sql), err)
			continue
		}
		if err := json.Unmarshal(raw, &plan); err != nil || len(plan) == 0 {
			t.Fatalf("%s: plan %s: %v", st.call, raw, err)
		}
		explained++
		for _, rel := range seqScans(plan[0]["Plan"]) {
			if growing[rel] {
				t.Errorf("%s: a sequential scan of %s in %s", st.call, rel, oneLine(st.sql))
			}
		}
	}
	t.Logf("%d statements explained over %d calls", explained, len(calls)+3)
	if explained < 2*(len(calls)+3) {
		t.Fatalf("only %d statements explained: the recorder missed the calls", explained)
	}
}

// seqScans lists the relations a plan (or any node under it) scans sequentially.
func seqScans(node any) []string {
	n, ok := node.(map[string]any)
	if !ok {
		return nil
	}
	var out []string
	if n["Node Type"] == "Seq Scan" {
		rel, _ := n["Relation Name"].(string)
		out = append(out, rel)
	}
	if kids, ok := n["Plans"].([]any); ok {
		for _, k := range kids {
			out = append(out, seqScans(k)...)
		}
	}
	return out
}

// Rows loaded besides the probe tenant's: many tenants' worth of load balancers, history and
// idle work, so that a plan that reads a whole table costs what a large deployment would pay.
const (
	bulkTenants       = 500
	bulkLoadBalancers = 20000
	bulkEvents        = 100000
	bulkIdempotency   = 20000
	bulkWorkItems     = 20000
	bulkUsage         = 20000
	bulkInbox         = 20000
)

// load copies the template rows with SQL (not through the API) into bulkTenants other tenants.
// A usage interval and an unnumbered event (of tenants that never read their events) are
// written here as templates: a pending load balancer has neither.
func load(t *testing.T, q store.Querier, tenant, template string) {
	t.Helper()
	for _, sql := range []string{
		`INSERT INTO usage_records (id, tenant_id, meter, resource_id, started_at, ended_at) VALUES ('usage-' || $2, $1, 'vps.load-balancer.hours', $2, now(), now())`,
		`INSERT INTO event_inbox (tenant_id, id, type, resource_id) VALUES ('inbox-' || $1, 'inbox-' || $2, 'providerLoadBalancer.created', $2)`,
	} {
		if _, err := q.Exec(context.Background(), sql, tenant, template); err != nil {
			t.Fatal(err)
		}
	}
	bulkTenant := fmt.Sprintf("'bulk-' || (g %% %d)", bulkTenants)
	storetest.Load(t, q, []storetest.Copies{
		{Table: "tenants", Where: "id = $1", N: bulkTenants, Set: map[string]string{"id": "'bulk-' || (g - 1)", "display_name": "'bulk'"}},
		{Table: "load_balancers", Where: "id = $2", N: bulkLoadBalancers, Set: map[string]string{"id": "id || '-' || g", "tenant_id": bulkTenant, "name": "name || '-' || g"}},
		{Table: "events", Where: "tenant_id = $1 AND resource_id = $2", N: bulkEvents, Set: map[string]string{"tenant_id": bulkTenant, "seq": "g", "id": "id || '-' || g", "resource_id": "resource_id || '-' || (g % 20000)"}},
		{Table: "idempotency_keys", Where: "tenant_id = $1", N: bulkIdempotency, Set: map[string]string{"tenant_id": bulkTenant, "idem_key": "idem_key || '-' || g", "resource_id": "resource_id || '-' || g"}},
		{Table: "quotas", Where: "tenant_id = $1", N: bulkTenants, Set: map[string]string{"tenant_id": "'bulk-' || (g - 1)"}},
		{Table: "usage_records", Where: "resource_id = $2", N: bulkUsage, Set: map[string]string{"id": "id || '-' || g", "tenant_id": bulkTenant,
			"resource_id": "resource_id || '-' || g", "ended_at": "CASE WHEN g % 2 = 0 THEN ended_at END"}},
		{Table: "event_inbox", Where: "resource_id = $2", N: bulkInbox, Set: map[string]string{"tenant_id": bulkTenant, "id": "id || '-' || g"}},
		{Table: "work_items", Where: "resource_id = $2", N: bulkWorkItems, Set: map[string]string{"resource_id": "resource_id || '-' || g", "due_at": "NULL", "lease_holder": "NULL", "lease_expires_at": "NULL"}},
	}, tenant, template)
}

func oneLine(sql string) string {
	s := strings.Join(strings.Fields(sql), " ")
	if len(s) > 300 {
		s = s[:300] + "..."
	}
	return s
}

// start runs one replica on schema with rec installed on its database connections (no
// reconcilers: the claim is called directly, so every recorded statement is the test's).
func start(t *testing.T, schema *storetest.Schema, rec *recorder) *apptest.Stack {
	t.Helper()
	return apptest.StartOn(store.WithTracer(context.Background(), rec), t, schema, schema.URL)
}
