// Package largetables measures whether the request path costs what the call needs or what the
// tables hold: create, get and list p50 and p99 for a small tenant and for a tenant with a
// hundred thousand load balancers, first on an empty schema, then, in the same run, after SQL
// (not the API) has loaded a large deployment's rows: 1,000,000 load balancers over 10,000
// tenants (the big tenant holding 100,000 of them), 10,000,000 events and 1,000,000 idempotency
// records. It reports each figure loaded and empty and their ratio (goal: <= 1.3), and the big
// tenant's list page by page (its first 1,000, then the following pages).
//
//	go test -run '^$' -bench . -benchtime 1x -timeout 60m ./bench/largetables
//	BC_BENCH_SCALE=0.1 go test ...   # a tenth of every count, for a quick look
package largetables

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"better-compute.dev/compute/app/apptest"
	v1 "better-compute.dev/compute/gen/go/bettercompute/compute/v1"
	"better-compute.dev/compute/store/storetest"
)

// Calls timed per figure, sequentially (one client: the call's own latency, not queueing).
const calls = 60

// pagesWalked is how many pages of 1,000 the big tenant's list is walked for.
const pagesWalked = 5

func BenchmarkLargeTables(b *testing.B) {
	scale := 1.0
	if v := os.Getenv("BC_BENCH_SCALE"); v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f <= 0 || f > 1 {
			b.Fatalf("BC_BENCH_SCALE=%q: want a number in (0, 1]", v)
		}
		scale = f
	}
	n := func(full int) int { return max(1, int(float64(full)*scale)) }
	var (
		tenants       = n(10000)
		loadBalancers = n(1000000)
		bigTenantLBs  = n(100000)
		events        = n(10000000)
		idempotency   = n(1000000)
	)
	s := apptest.Start(b)
	small := s.NewTenant(b, "small", "editor")
	big := s.NewTenant(b, "big", "editor")
	for _, tn := range []apptest.Tenant{small, big} {
		if _, err := s.App.Pools.SetQuota(s.AdminCtx, &v1.SetQuotaRequest{TenantId: tn.ID, PoolId: tn.PoolID, Resource: "loadBalancers", Limit: 10000000}); err != nil {
			b.Fatal(err)
		}
	}
	client := &http.Client{Timeout: 60 * time.Second}
	post := func(tn apptest.Tenant, path string, body map[string]any) map[string]any {
		raw, _ := json.Marshal(body)
		req, _ := http.NewRequest(http.MethodPost, s.App.URL+"/api/compute/"+path, bytes.NewReader(raw))
		req.Header.Set("Authorization", "Bearer "+tn.Token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&out)
		_, _ = io.Copy(io.Discard, resp.Body)
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("%s: HTTP %d %v", path, resp.StatusCode, out)
		}
		return out
	}
	seq := 0
	create := func(tn apptest.Tenant) string {
		seq++
		out := post(tn, "loadBalancers/create", map[string]any{
			"tenantId": tn.ID, "poolId": tn.PoolID, "name": fmt.Sprintf("lb-%d", seq), "region": "nyc3", "targets": map[string]any{"pool": true},
			"forwarding":     []any{map[string]any{"entryProtocol": "http", "entryPort": 80, "targetProtocol": "http", "targetPort": 8080}},
			"idempotencyKey": fmt.Sprintf("k-%d", seq),
		})
		return out["loadBalancer"].(map[string]any)["id"].(string)
	}
	type figures map[string][2]time.Duration // p50, p99 by call
	measure := func() figures {
		out := figures{}
		timed := func(name string, f func()) {
			var d []time.Duration
			f() // one untimed call: connections and caches warm
			for range calls {
				t0 := time.Now()
				f()
				d = append(d, time.Since(t0))
			}
			slices.Sort(d)
			out[name] = [2]time.Duration{d[len(d)/2], d[len(d)*99/100]}
		}
		for _, tn := range []apptest.Tenant{small, big} {
			var last string
			timed(tn.ID+" create", func() { last = create(tn) })
			timed(tn.ID+" get", func() { post(tn, "loadBalancers/get", map[string]any{"tenantId": tn.ID, "loadBalancerId": last}) })
			timed(tn.ID+" list 20", func() { post(tn, "loadBalancers/list", map[string]any{"tenantId": tn.ID, "pageSize": 20}) })
		}
		// The big tenant's list, page by page (on the empty schema it holds only what the
		// creates above made: the loaded run's pages are measured against its first page).
		page := func(i int) {
			token := ""
			for range i {
				o := post(big, "loadBalancers/list", map[string]any{"tenantId": big.ID, "pageSize": 1000, "pageToken": token})
				token, _ = o["nextPageToken"].(string)
				if token == "" {
					return
				}
			}
		}
		timed("big list page 1 of 1000", func() { page(1) })
		return out
	}

	// Templates the load copies: the big tenant's first load balancer, its event (numbered by
	// reading the events) and its idempotency record.
	template := create(big)
	post(big, "events/list", map[string]any{"tenantId": big.ID})
	empty := measure()

	t0 := time.Now()
	other := fmt.Sprintf("'bulk-' || (g %% %d)", tenants)
	storetest.Load(b, s.App.DB.Q(), []storetest.Copies{
		{Table: "tenants", Where: "id = $1", N: tenants, Set: map[string]string{"id": "'bulk-' || (g - 1)", "display_name": "'bulk'"}},
		{Table: "load_balancers", Where: "id = $2", N: loadBalancers, Set: map[string]string{"id": "id || '-' || g", "name": "name || '-' || g",
			"tenant_id":  fmt.Sprintf("CASE WHEN g <= %d THEN tenant_id ELSE %s END", bigTenantLBs, other),
			"created_at": "created_at - g * interval '1 second'"}},
		{Table: "events", Where: "tenant_id = $1 AND resource_id = $2", N: events, Set: map[string]string{"seq": "1000000000 + g", "id": "id || '-' || g",
			"tenant_id": fmt.Sprintf("CASE WHEN g <= %d THEN tenant_id ELSE %s END", events/10, other), "resource_id": "resource_id || '-' || (g % 100000)"}},
		{Table: "idempotency_keys", Where: "tenant_id = $1", N: idempotency, Set: map[string]string{"tenant_id": other, "idem_key": "idem_key || '-' || g", "resource_id": "resource_id || '-' || g"}},
		{Table: "quotas", Where: "tenant_id = $1", N: tenants, Set: map[string]string{"tenant_id": "'bulk-' || (g - 1)"}},
	}, big.ID, template)
	b.Logf("loaded %d tenants, %d load balancers (%d of the big tenant's), %d events, %d idempotency records in %s",
		tenants, loadBalancers, bigTenantLBs, events, idempotency, time.Since(t0).Round(time.Second))

	loaded := measure()
	// The big tenant's following pages, against its first page on the loaded schema.
	token := ""
	var walked []string
	for i := 1; i <= pagesWalked; i++ {
		t0 := time.Now()
		o := post(big, "loadBalancers/list", map[string]any{"tenantId": big.ID, "pageSize": 1000, "pageToken": token})
		d := time.Since(t0)
		walked = append(walked, fmt.Sprintf("page %d: %d in %s (%.2f x)", i, len(o["loadBalancers"].([]any)), d.Round(time.Millisecond),
			float64(d)/float64(loaded["big list page 1 of 1000"][0])))
		if token, _ = o["nextPageToken"].(string); token == "" {
			break
		}
	}
	// One line: a benchmark's log keeps only its first lines.
	b.Logf("big tenant's pages against its first page's p50: %s", strings.Join(walked, "; "))
	names := make([]string, 0, len(empty))
	for k := range empty {
		names = append(names, k)
	}
	slices.Sort(names)
	worst := 0.0
	for _, k := range names {
		e, l := empty[k], loaded[k]
		r50, r99 := float64(l[0])/float64(e[0]), float64(l[1])/float64(e[1])
		b.Logf("%-26s p50 %9s -> %9s (%.2f x)   p99 %9s -> %9s (%.2f x)", k, e[0].Round(time.Microsecond), l[0].Round(time.Microsecond), r50,
			e[1].Round(time.Microsecond), l[1].Round(time.Microsecond), r99)
		if k != "big list page 1 of 1000" { // empty, that page holds the few creates above
			worst = max(worst, r50)
		}
		b.ReportMetric(r50, strings.ReplaceAll(k, " ", "_")+"-p50-ratio")
	}
	b.ReportMetric(worst, "worst-p50-ratio")
}
