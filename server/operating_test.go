package server_test

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"better-compute.dev/compute/app"
	"better-compute.dev/compute/app/apptest"
	"better-compute.dev/compute/provider/digitalocean/sim"
	"better-compute.dev/compute/store"
	"better-compute.dev/compute/store/storetest"
)

// exported is what one /metrics answer declares: each family's type (# TYPE), the label names
// its samples carry (le and quantile aside), and every sample name.
type exported struct {
	types   map[string]string
	labels  map[string]map[string]bool
	samples map[string]bool
}

// family maps a sample name to its family (a histogram's _bucket, _sum and _count series).
func (e exported) family(sample string) string {
	if _, ok := e.types[sample]; ok {
		return sample
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(sample, suffix); ok {
			if typ := e.types[base]; typ == "histogram" || typ == "summary" {
				return base
			}
		}
	}
	return sample
}

func readExported(t *testing.T, r io.Reader) exported {
	t.Helper()
	e := exported{types: map[string]string{}, labels: map[string]map[string]bool{}, samples: map[string]bool{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var lines []string
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, "# TYPE "); ok {
			f := strings.Fields(rest)
			e.types[f[0]] = f[1]
			e.labels[f[0]] = map[string]bool{}
			continue
		}
		if line != "" && !strings.HasPrefix(line, "#") {
			lines = append(lines, line)
		}
	}
	for _, line := range lines {
		name, rest, _ := strings.Cut(line, "{")
		if i := strings.IndexByte(name, ' '); i >= 0 {
			name, rest = name[:i], ""
		}
		e.samples[name] = true
		fam := e.family(name)
		if e.labels[fam] == nil {
			t.Fatalf("sample %s of no declared family", name)
		}
		if i := strings.LastIndex(rest, "}"); i >= 0 {
			for _, kv := range splitLabels(rest[:i]) {
				k, _, _ := strings.Cut(kv, "=")
				if k != "le" && k != "quantile" {
					e.labels[fam][k] = true
				}
			}
		}
	}
	return e
}

// busyReplica runs a replica that has done a bit of everything the metrics count (an RPC, a
// load balancer reconciled against the DigitalOcean simulator, a lease taken over and a stale
// holder's write refused), and returns what its metrics listener exports.
func busyReplica(t *testing.T) exported {
	t.Helper()
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
	// A tenant (so a provider token, so a budget) of this test's own: budgets are leased per token.
	tn := s.NewTenant(t, "busy-"+strings.ToLower(strings.TrimPrefix(t.Name(), "Test")), "editor")
	if status, got := s.PostJSON(t, "/api/compute/loadBalancers/create", tn.Token, map[string]any{
		"tenantId": tn.ID, "poolId": tn.PoolID, "name": "web", "region": "nyc3", "targets": map[string]any{"pool": true},
		"forwarding":     []any{map[string]any{"entryProtocol": "http", "entryPort": 80, "targetProtocol": "http", "targetPort": 8080}},
		"idempotencyKey": "busy-1",
	}); status != http.StatusOK {
		t.Fatalf("create: %d %v", status, got)
	}
	ctx := context.Background()
	const kind = "test.busy"
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
	if _, err := store.Claim(ctx, s.App.DB, store.ClaimParams{Holder: "b", Kinds: []string{kind}, Limit: 1, LeaseTTL: time.Minute, Now: now.Add(2 * time.Second)}); err != nil {
		t.Fatal(err)
	}
	if err := store.Complete(ctx, s.App.DB, store.CompleteParams{Lease: first[0], Now: now.Add(3 * time.Second)}); err == nil {
		t.Fatal("the stale holder's write went through")
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(s.App.MetricsURL + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		e := readExported(t, resp.Body)
		resp.Body.Close()
		if e.samples["bc_provider_request_duration_seconds_count"] && e.samples["bc_provider_budget_tokens"] && e.samples["bc_provider_ratelimit_remaining"] {
			return e
		}
		if time.Now().After(deadline) {
			t.Fatalf("the reconciler made no provider request in time; exported %v", e.types)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// documentedMetric is one row of a metric table of docs/observability.md.
type documentedMetric struct {
	typ    string
	labels []string
}

// readMetricDocs reads the rows "| `name` | type | `label`, ... or - | meaning | action |".
func readMetricDocs(t *testing.T) map[string]documentedMetric {
	t.Helper()
	raw, err := os.ReadFile("../docs/observability.md")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]documentedMetric{}
	row := regexp.MustCompile("^\\| `([a-z_:][a-z0-9_:]*)` \\| ([a-z]+) \\| ([^|]*) \\|")
	for _, line := range strings.Split(string(raw), "\n") {
		m := row.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		var labels []string
		for _, l := range strings.Split(m[3], ",") {
			if l = strings.Trim(strings.TrimSpace(l), "`"); l != "" && l != "-" {
				labels = append(labels, l)
			}
		}
		sort.Strings(labels)
		if _, dup := out[m[1]]; dup {
			t.Errorf("docs/observability.md lists %s twice", m[1])
		}
		out[m[1]] = documentedMetric{typ: m[2], labels: labels}
	}
	return out
}

// TestEveryMetricIsDocumented: every family a busy replica's /metrics exports has a row in
// docs/observability.md with its type and labels, and every row names a family it exports.
func TestEveryMetricIsDocumented(t *testing.T) {
	e := busyReplica(t)
	docs := readMetricDocs(t)
	for name, typ := range e.types {
		d, ok := docs[name]
		if !ok {
			t.Errorf("%s (%s) is exported but not documented in docs/observability.md", name, typ)
			continue
		}
		if d.typ != typ {
			t.Errorf("%s: documented as %s, exported as %s", name, d.typ, typ)
		}
		var labels []string
		for l := range e.labels[name] {
			labels = append(labels, l)
		}
		sort.Strings(labels)
		if strings.Join(labels, ",") != strings.Join(d.labels, ",") {
			t.Errorf("%s: documented labels %v, exported %v", name, d.labels, labels)
		}
	}
	for name := range docs {
		if _, ok := e.types[name]; !ok {
			t.Errorf("docs/observability.md documents %s, which /metrics does not export", name)
		}
	}
	if len(e.types) < 40 {
		t.Fatalf("only %d families exported", len(e.types))
	}
	t.Logf("%d families exported and documented", len(e.types))
}

// promKeywords are PromQL words that are not metric names.
var promKeywords = map[string]bool{"and": true, "or": true, "unless": true, "by": true, "without": true, "on": true,
	"ignoring": true, "group_left": true, "group_right": true, "offset": true, "bool": true, "inf": true, "nan": true}

// metricNames returns the metric names a PromQL expression selects: identifiers that are not
// functions, keywords, label names (in matchers and grouping clauses) or parts of strings.
func metricNames(expr string) []string {
	expr = regexp.MustCompile(`"(\\.|[^"\\])*"`).ReplaceAllString(expr, `""`)
	expr = regexp.MustCompile(`\{[^}]*\}`).ReplaceAllString(expr, " ")
	expr = regexp.MustCompile(`\[[^\]]*\]`).ReplaceAllString(expr, " ")
	expr = regexp.MustCompile(`\boffset\s+[0-9a-z]+`).ReplaceAllString(expr, " ")
	expr = regexp.MustCompile(`\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`).ReplaceAllString(expr, " ")
	var out []string
	ident := regexp.MustCompile(`[A-Za-z_:][A-Za-z0-9_:]*(\s*\()?`)
	for _, m := range ident.FindAllString(expr, -1) {
		if strings.HasSuffix(m, "(") || promKeywords[strings.ToLower(m)] {
			continue
		}
		out = append(out, m)
	}
	return out
}

// alertRules is deploy/prometheus/alerts.yaml as Prometheus reads a rule file.
type alertRules struct {
	Groups []struct {
		Name  string `yaml:"name"`
		Rules []struct {
			Alert       string            `yaml:"alert"`
			Expr        string            `yaml:"expr"`
			For         string            `yaml:"for"`
			Labels      map[string]string `yaml:"labels"`
			Annotations map[string]string `yaml:"annotations"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

// TestAlertsUseExportedMetrics: the example alert set parses as a Prometheus rule file, covers
// the failures that matter, and every metric name its expressions use is exported by a replica.
func TestAlertsUseExportedMetrics(t *testing.T) {
	raw, err := os.ReadFile("../deploy/prometheus/alerts.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var rules alertRules
	dec := yaml.NewDecoder(strings.NewReader(string(raw)))
	dec.KnownFields(true)
	if err := dec.Decode(&rules); err != nil {
		t.Fatalf("alerts.yaml: %v", err)
	}
	e := busyReplica(t)
	docs := readMetricDocs(t)
	anchors := headingAnchors(t)
	alerts := map[string]bool{}
	for _, g := range rules.Groups {
		if g.Name == "" || len(g.Rules) == 0 {
			t.Errorf("group %q has no name or no rules", g.Name)
		}
		for _, r := range g.Rules {
			if r.Alert == "" || strings.TrimSpace(r.Expr) == "" {
				t.Errorf("%s: a rule without alert or expr", g.Name)
				continue
			}
			if alerts[r.Alert] {
				t.Errorf("alert %s twice", r.Alert)
			}
			alerts[r.Alert] = true
			if r.For != "" {
				if _, err := time.ParseDuration(r.For); err != nil {
					t.Errorf("%s: for %q: %v", r.Alert, r.For, err)
				}
			}
			if r.Labels["severity"] == "" || r.Annotations["summary"] == "" || r.Annotations["runbook"] == "" {
				t.Errorf("%s: needs labels.severity and annotations summary and runbook", r.Alert)
			}
			if rb := r.Annotations["runbook"]; rb != "" {
				anchor, ok := strings.CutPrefix(rb, "docs/observability.md#")
				if !ok || !anchors[anchor] {
					t.Errorf("%s: runbook %q is not a section of docs/observability.md", r.Alert, rb)
				}
			}
			names := metricNames(r.Expr)
			if len(names) == 0 {
				t.Errorf("%s: no metric in %q", r.Alert, r.Expr)
			}
			for _, n := range names {
				if !e.samples[n] {
					t.Errorf("%s uses %s, which a replica's /metrics does not export", r.Alert, n)
				}
				if _, ok := docs[e.family(n)]; !ok {
					t.Errorf("%s uses %s, which docs/observability.md does not document", r.Alert, n)
				}
			}
		}
	}
	for _, want := range []string{"BCWorkQueueAgeGrowing", "BCProvider5xxRate", "BCAuthzUnavailable", "BCDBPoolExhausted",
		"BCReplicaNotReady", "BCEventsBacklog", "BCResourcesUnqueued"} {
		if !alerts[want] {
			t.Errorf("no alert %s", want)
		}
	}
}

// headingAnchors are the anchors of docs/observability.md's headings, as Markdown renderers
// make them (lower case, spaces to hyphens, punctuation dropped).
func headingAnchors(t *testing.T) map[string]bool {
	t.Helper()
	raw, err := os.ReadFile("../docs/observability.md")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	drop := regexp.MustCompile(`[^a-z0-9 _-]`)
	for _, line := range strings.Split(string(raw), "\n") {
		if !strings.HasPrefix(line, "#") {
			continue
		}
		title := strings.TrimSpace(strings.TrimLeft(line, "#"))
		out[strings.ReplaceAll(drop.ReplaceAllString(strings.ToLower(title), ""), " ", "-")] = true
	}
	return out
}

func TestMetricNamesOfPromQL(t *testing.T) {
	got := metricNames(`sum by (provider, endpoint) (rate(bc_provider_requests_total{status=~"5..", x="a{b}"}[5m]))
		/ on (provider) sum without (status) (rate(bc_provider_requests_total[5m])) > 0.05 and bc_ready == 0`)
	if strings.Join(got, " ") != "bc_provider_requests_total bc_provider_requests_total bc_ready" {
		t.Fatalf("%v", got)
	}
}

// TestReadyMetricFollowsReadiness: bc_ready is 1 (reason none) when /readyz is 200, and 0 with
// the /readyz reason when it is not: a schema behind the binary, then draining.
func TestReadyMetricFollowsReadiness(t *testing.T) {
	schema := storetest.NewSchema(t)
	a := startOn(t, schema.URL, time.Minute)
	ready := func(want float64, reason string) {
		t.Helper()
		m := getMetrics(t, a.URL)
		if len(m.samples["bc_ready"]) != 1 {
			t.Fatalf("bc_ready samples %v", m.samples["bc_ready"])
		}
		if s := m.samples["bc_ready"][0]; s.value != want || s.labels["reason"] != reason {
			t.Errorf("bc_ready %v %v, want %v reason %q", s.value, s.labels, want, reason)
		}
	}
	ready(1, "none")
	var last string
	if err := a.DB.Q().QueryRow(t.Context(), `DELETE FROM schema_migrations WHERE version = (SELECT max(version) FROM schema_migrations) RETURNING version`).Scan(&last); err != nil {
		t.Fatal(err)
	}
	ready(0, "database schema behind this binary (run bc-server migrate)")
	if _, err := a.DB.Q().Exec(t.Context(), `INSERT INTO schema_migrations (version) VALUES ($1)`, last); err != nil {
		t.Fatal(err)
	}
	ready(1, "none")
	ctx, cancel := context.WithCancel(context.Background())
	closed := make(chan struct{})
	go func() { defer close(closed); a.Close(ctx) }()
	deadline := time.Now().Add(30 * time.Second)
	for get(t, a.URL+"/readyz").code == http.StatusOK && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	ready(0, "draining")
	cancel()
	<-closed
}
