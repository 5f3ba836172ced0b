package server_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"better-compute.dev/compute/app"
	"better-compute.dev/compute/app/apptest"
	v1 "better-compute.dev/compute/gen/go/bettercompute/compute/v1"
	"better-compute.dev/compute/gen/go/bettercompute/compute/v1/computev1connect"
	"better-compute.dev/compute/provider/digitalocean/sim"
	"better-compute.dev/compute/store"
	"better-compute.dev/compute/testwait"
)

// scrape is one /metrics answer: every sample by name and its labels.
type scrape struct {
	samples map[string][]sample
	help    map[string]bool
}

type sample struct {
	labels map[string]string
	value  float64
}

func getMetrics(t *testing.T, url string) scrape {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s/metrics: %d", url, resp.StatusCode)
	}
	return parseMetrics(t, resp.Body)
}

// parseMetrics reads the Prometheus text format as promhttp writes it (no escapes in the
// label values these tests look at).
func parseMetrics(t *testing.T, r io.Reader) scrape {
	t.Helper()
	s := scrape{samples: map[string][]sample{}, help: map[string]bool{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, "# HELP "); ok {
			name, _, _ := strings.Cut(rest, " ")
			s.help[name] = true
			continue
		}
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		head, val, ok := strings.Cut(line, " ")
		if i := strings.LastIndex(line, "} "); i >= 0 {
			head, val, ok = line[:i+1], line[i+2:], true
		}
		if !ok {
			t.Fatalf("bad sample line %q", line)
		}
		v, err := strconv.ParseFloat(strings.Fields(val)[0], 64)
		if err != nil {
			t.Fatalf("bad value in %q", line)
		}
		name, labelText, _ := strings.Cut(head, "{")
		labels := map[string]string{}
		for _, kv := range splitLabels(strings.TrimSuffix(labelText, "}")) {
			k, v, _ := strings.Cut(kv, "=")
			labels[k] = strings.Trim(v, `"`)
		}
		s.samples[name] = append(s.samples[name], sample{labels, v})
	}
	return s
}

func splitLabels(s string) []string {
	var out []string
	inQuote, start := false, 0
	for i, r := range s {
		switch {
		case r == '"':
			inQuote = !inQuote
		case r == ',' && !inQuote:
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}

// sum adds the samples of name whose labels include want.
func (s scrape) sum(name string, want map[string]string) (float64, bool) {
	total, found := 0.0, false
	for _, smp := range s.samples[name] {
		match := true
		for k, v := range want {
			if smp.labels[k] != v {
				match = false
			}
		}
		if match {
			total += smp.value
			found = true
		}
	}
	return total, found
}

// TestMetricsExplainTheSystem: with BC_METRICS_LISTEN the API port serves no /metrics and the
// metrics listener serves every family docs/observability.md lists; real calls (a load balancer
// created over the JSON mapping and reconciled against the DigitalOcean simulator, a lease
// taken over and a stale holder's write refused) move the series they should.
func TestMetricsExplainTheSystem(t *testing.T) {
	simulator := sim.New(sim.Options{AcceptAnyToken: true, RequestsPerMinute: 100000, RequestsPerHour: 1000000,
		LoadBalancerActiveDelay: 50 * time.Millisecond, LoadBalancerIPDelay: 50 * time.Millisecond})
	simURL, err := simulator.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = simulator.Close() })
	s := apptest.Start(t, apptest.WithReconcile(), func(c *app.Config) {
		c.MetricsListen = "127.0.0.1:0"
		r := &c.Reconcilers
		r.PollInterval, r.ProviderPoll, r.DependencyPoll = 20*time.Millisecond, 50*time.Millisecond, 50*time.Millisecond
		r.BackoffInitial, r.BackoffMax = 20*time.Millisecond, 200*time.Millisecond
	})
	s.SimulatorURL = simURL
	if s.App.MetricsURL == "" {
		t.Fatal("no metrics listener")
	}
	resp, err := http.Get(s.App.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("API listener /metrics: %d, want 404 while BC_METRICS_LISTEN is set", resp.StatusCode)
	}

	before := getMetrics(t, s.App.MetricsURL)
	tn := s.NewTenant(t, "metrics", "editor")
	status, got := s.PostJSON(t, "/api/compute/loadBalancers/create", tn.Token, map[string]any{
		"tenantId": tn.ID, "poolId": tn.PoolID, "name": "web", "region": "nyc3", "targets": map[string]any{"pool": true},
		"forwarding":     []any{map[string]any{"entryProtocol": "http", "entryPort": 80, "targetProtocol": "http", "targetPort": 8080}},
		"idempotencyKey": "m1",
	})
	if status != http.StatusOK {
		t.Fatalf("create: %d %v", status, got)
	}

	// A lease left to lapse is taken over (a lease expiry), and the first holder's late
	// write is refused by the fence.
	ctx := context.Background()
	const kind = "test.metrics"
	tx, err := s.App.DB.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Enqueue(ctx, tx, kind, "r1", nil); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	now := time.Now().Add(time.Minute)
	first, err := store.Claim(ctx, s.App.DB, store.ClaimParams{Holder: "a", Kinds: []string{kind}, Limit: 1, LeaseTTL: time.Second, Now: now})
	if err != nil || len(first) != 1 {
		t.Fatalf("claim: %v %v", first, err)
	}
	second, err := store.Claim(ctx, s.App.DB, store.ClaimParams{Holder: "b", Kinds: []string{kind}, Limit: 1, LeaseTTL: time.Minute, Now: now.Add(2 * time.Second)})
	if err != nil || len(second) != 1 {
		t.Fatalf("takeover: %v %v", second, err)
	}
	if err := store.Complete(ctx, s.App.DB, store.CompleteParams{Lease: first[0], Now: now.Add(3 * time.Second)}); err == nil {
		t.Fatal("the stale holder's write went through")
	}

	// The reconciler creates the load balancer at the simulator.
	var after scrape
	testwait.Until(t, 20*time.Second, "a load balancer POST counted", func() (bool, string) {
		after = getMetrics(t, s.App.MetricsURL)
		// The series are per process: count this run's POST, not one an earlier run made.
		post := map[string]string{"provider": "digitalocean", "endpoint": "/v2/load_balancers", "method": "POST"}
		n, _ := after.sum("bc_provider_requests_total", post)
		was, _ := before.sum("bc_provider_requests_total", post)
		return n-was >= 1, fmt.Sprint(after.samples["bc_provider_requests_total"])
	})

	for _, family := range []string{
		"go_goroutines", "go_memstats_heap_alloc_bytes", "process_cpu_seconds_total", "process_resident_memory_bytes",
		"bc_rpc_calls_total", "bc_rpc_duration_seconds_count",
		"bc_db_pool_acquired_conns", "bc_db_pool_idle_conns", "bc_db_pool_total_conns", "bc_db_pool_max_conns",
		"bc_db_pool_acquires_total", "bc_db_pool_acquire_waits_total", "bc_db_pool_acquire_wait_seconds_total", "bc_db_stats_up",
		"bc_work_queue_depth", "bc_work_queue_due", "bc_work_queue_leased", "bc_work_queue_oldest_due_age_seconds",
		"bc_work_claims_total", "bc_work_lease_expiries_total", "bc_work_fenced_writes_refused_total",
		"bc_provider_requests_total", "bc_provider_request_duration_seconds_count", "bc_provider_ratelimit_waits_total",
		"bc_provider_ratelimit_wait_seconds_count", "bc_provider_budget_tokens", "bc_provider_budget_blocked_seconds",
		"bc_authz_check_duration_seconds_count", "bc_events_backlog", "bc_events_backlog_oldest_age_seconds", "bc_event_watches_open",
	} {
		if len(after.samples[family]) == 0 {
			t.Errorf("family %s missing", family)
		}
	}
	delta := func(name string, labels map[string]string) float64 {
		a, _ := after.sum(name, labels)
		b, _ := before.sum(name, labels)
		return a - b
	}
	if v, _ := after.sum("bc_db_stats_up", nil); v != 1 {
		t.Errorf("bc_db_stats_up %v", v)
	}
	if v, _ := after.sum("bc_db_pool_max_conns", nil); v < 1 {
		t.Errorf("bc_db_pool_max_conns %v", v)
	}
	if d := delta("bc_db_pool_acquires_total", nil); d <= 0 {
		t.Errorf("pool acquires did not grow: %v", d)
	}
	if d := delta("bc_rpc_calls_total", map[string]string{"procedure": "/bettercompute.compute.v1.LoadBalancerService/CreateLoadBalancer", "code": "ok"}); d != 1 {
		t.Errorf("create calls counted %v, want 1", d)
	}
	if d := delta("bc_work_claims_total", map[string]string{"kind": kind}); d != 2 {
		t.Errorf("claims of %s: %v, want 2", kind, d)
	}
	if d := delta("bc_work_lease_expiries_total", map[string]string{"kind": kind}); d != 1 {
		t.Errorf("lease expiries of %s: %v, want 1", kind, d)
	}
	if d := delta("bc_work_fenced_writes_refused_total", map[string]string{"kind": kind, "op": "complete"}); d != 1 {
		t.Errorf("fenced writes refused of %s: %v, want 1", kind, d)
	}
	if v, _ := after.sum("bc_work_queue_leased", map[string]string{"kind": kind}); v != 1 {
		t.Errorf("leased %s items: %v, want 1", kind, v)
	}
	if v, _ := after.sum("bc_work_queue_depth", map[string]string{"kind": kind}); v != 1 {
		t.Errorf("queued %s items: %v, want 1", kind, v)
	}
	if d := delta("bc_work_claims_total", map[string]string{"kind": "vps.provider-resources"}); d < 1 {
		t.Errorf("reconciler claims %v", d)
	}
	if d := delta("bc_provider_ratelimit_waits_total", map[string]string{"provider": "digitalocean", "outcome": "sent"}) +
		delta("bc_provider_ratelimit_waits_total", map[string]string{"provider": "digitalocean", "outcome": "waited"}); d < 1 {
		t.Errorf("rate limiter passes %v", d)
	}
	ok := false
	for _, smp := range after.samples["bc_provider_requests_total"] {
		if smp.labels["endpoint"] == "/v2/load_balancers" && smp.labels["method"] == "POST" && strings.HasPrefix(smp.labels["status"], "2") {
			ok = true
		}
		if strings.Contains(smp.labels["endpoint"], "do-token") {
			t.Errorf("a token in an endpoint label: %v", smp.labels)
		}
	}
	if !ok {
		t.Errorf("no successful POST /v2/load_balancers: %v", after.samples["bc_provider_requests_total"])
	}
	if len(after.samples["bc_provider_budget_tokens"]) == 0 || len(after.samples["bc_provider_budget_tokens"][0].labels["budget"]) != 12 {
		t.Errorf("budget series %v", after.samples["bc_provider_budget_tokens"])
	}
	if d := delta("bc_authz_check_duration_seconds_count", map[string]string{"op": "check", "outcome": "allowed"}); d < 1 {
		t.Errorf("allowed authorization checks %v", d)
	}
	for _, name := range []string{"bc_work_queue_depth", "bc_provider_requests_total", "bc_authz_check_duration_seconds", "bc_events_backlog"} {
		if !after.help[name] {
			t.Errorf("%s has no HELP", name)
		}
	}
}

// TestTracesFollowACall: one create over the JSON mapping, sent with a W3C traceparent, makes a
// server span in the caller's trace (the trace id is kept, the caller's span is its parent)
// and client spans for the database statements under it.
func TestTracesFollowACall(t *testing.T) {
	exporter := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exporter))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	s := apptest.Start(t, func(c *app.Config) { c.TracerProvider = tp })
	tn := s.NewTenant(t, "traced", "editor")
	exporter.Reset()

	const traceID, parentID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	req, err := http.NewRequest(http.MethodPost, s.App.URL+"/api/compute/loadBalancers/create", strings.NewReader(`{"tenantId":"`+tn.ID+
		`","poolId":"`+tn.PoolID+`","name":"web","region":"nyc3","targets":{"pool":true},"idempotencyKey":"t1",`+
		`"forwarding":[{"entryProtocol":"http","entryPort":80,"targetProtocol":"http","targetPort":8080}]}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+tn.Token)
	req.Header.Set("traceparent", "00-"+traceID+"-"+parentID+"-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("create: %d %s", resp.StatusCode, body)
	}
	if err := tp.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}

	spans := exporter.GetSpans()
	var server *tracetest.SpanStub
	for i := range spans {
		if spans[i].SpanKind == trace.SpanKindServer && spans[i].Name == "bettercompute.compute.v1.LoadBalancerService/CreateLoadBalancer" {
			server = &spans[i]
		}
	}
	if server == nil {
		names := []string{}
		for _, sp := range spans {
			names = append(names, sp.Name+"/"+sp.SpanKind.String())
		}
		t.Fatalf("no server span for the create; spans: %v", names)
	}
	if got := server.SpanContext.TraceID().String(); got != traceID {
		t.Errorf("server span trace id %s, want the caller's %s", got, traceID)
	}
	if got := server.Parent.SpanID().String(); got != parentID {
		t.Errorf("server span parent %s, want the caller's span %s", got, parentID)
	}
	children := 0
	for _, sp := range spans {
		if sp.SpanKind != trace.SpanKindClient || sp.Parent.SpanID() != server.SpanContext.SpanID() {
			continue
		}
		var system, text string
		for _, a := range sp.Attributes {
			switch a.Key {
			case "db.system.name":
				system = a.Value.AsString()
			case "db.query.text":
				text = a.Value.AsString()
			}
		}
		if system != "postgresql" || text == "" {
			continue
		}
		children++
		if strings.Contains(text, tn.Token) || strings.Contains(text, `"web"`) {
			t.Errorf("a database span quotes request values: %s", text)
		}
	}
	if children < 2 {
		t.Errorf("%d database spans under the server span, want several", children)
	}
}

// TestWatchesOpenGauge: bc_event_watches_open counts a WatchEvents stream while the replica
// serves it and no longer once the caller has closed it. The gauge is per process, and this
// package's tests run one at a time, so the change seen is this test's own stream.
func TestWatchesOpenGauge(t *testing.T) {
	s := apptest.Start(t, func(c *app.Config) {
		c.MetricsListen = "127.0.0.1:0"
		c.WatchPoll = 20 * time.Millisecond
		c.WatchHeartbeat = 100 * time.Millisecond
	})
	tn := s.NewTenant(t, "watchgauge", "viewer")
	open := func() float64 {
		v, _ := getMetrics(t, s.App.MetricsURL).sum("bc_event_watches_open", nil)
		return v
	}
	before := open()
	evc := computev1connect.NewEventServiceClient(h2c(), s.App.URL, connect.WithGRPC(), bearer(tn.Token))
	ctx, cancel := context.WithCancel(t.Context())
	stream, err := evc.WatchEvents(ctx, connect.NewRequest(&v1.WatchEventsRequest{TenantId: tn.ID}))
	if err != nil {
		t.Fatal(err)
	}
	if !stream.Receive() { // a heartbeat: the server is serving the stream now
		t.Fatalf("watch: %v", stream.Err())
	}
	if v := open(); v != before+1 {
		t.Errorf("bc_event_watches_open %v with one watch open, want %v", v, before+1)
	}
	cancel()
	stream.Close()
	testwait.Until(t, 5*time.Second, "the closed watch no longer counted", func() (bool, string) {
		v := open()
		return v == before, fmt.Sprint(v)
	})

	// A watch refused for authorization leaves the count as it was.
	other := s.NewTenant(t, "watchgauge-other", "viewer")
	refused, err := evc.WatchEvents(t.Context(), connect.NewRequest(&v1.WatchEventsRequest{TenantId: other.ID}))
	if err == nil {
		for refused.Receive() {
		}
		err = refused.Err()
		refused.Close()
	}
	if connect.CodeOf(err) != connect.CodePermissionDenied && connect.CodeOf(err) != connect.CodeNotFound {
		t.Errorf("a watch of another tenant: %v", err)
	}
	testwait.Until(t, 5*time.Second, "the refused watch not counted", func() (bool, string) {
		v := open()
		return v == before, fmt.Sprint(v)
	})
}
