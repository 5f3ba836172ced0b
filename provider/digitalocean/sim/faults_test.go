package sim_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/digitalocean/godo"

	"better-compute.dev/compute/provider/digitalocean/sim"
)

// TestFaultKinds: each kind, aimed at one create, shows its answer and whether the change was
// made. Faults before the change leave nothing; after-commit faults leave the load balancer.
func TestFaultKinds(t *testing.T) {
	t.Parallel()
	cases := []struct {
		reason     string
		kind       sim.FaultKind
		wantStatus int  // 0: no HTTP answer at all
		wantMade   bool // the load balancer exists afterwards
	}{
		{"server error before the change", sim.Fault5xx, http.StatusInternalServerError, false},
		{"rate limited before the change", sim.Fault429, http.StatusTooManyRequests, false},
		{"connection reset before the change", sim.FaultReset, 0, false},
		{"slow but served", sim.FaultSlow, 0, true},
		{"timeout after the change", sim.FaultTimeoutAfterCommit, http.StatusGatewayTimeout, true},
		{"reset after the change", sim.FaultResetAfterCommit, 0, true},
	}
	for _, c := range cases {
		t.Run(string(c.kind), func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, sim.Options{})
			e.srv.SetFaults(sim.Faults{Rate: 1, Kinds: []sim.FaultKind{c.kind}, SlowDelay: 5 * time.Millisecond,
				RetryAfter: 3 * time.Second, Methods: []string{"POST"}, Paths: []string{"/v2/load_balancers"}, Max: 1})
			_, resp, err := e.do.LoadBalancers.Create(context.Background(), regionalRequest("faulted"))
			switch {
			case c.kind == sim.FaultSlow:
				if err != nil {
					t.Errorf("%s: %v", c.reason, err)
				}
			case c.wantStatus == 0:
				if err == nil || statusOf(err) != 0 {
					t.Errorf("%s: %v, want a broken connection", c.reason, err)
				}
			case statusOf(err) != c.wantStatus:
				t.Errorf("%s: %v, want %d", c.reason, err, c.wantStatus)
			}
			if c.kind == sim.Fault429 && (resp.Header.Get("retry-after") != "3" || resp.Rate.Remaining != 0) {
				t.Errorf("%s: retry-after %q remaining %d", c.reason, resp.Header.Get("retry-after"), resp.Rate.Remaining)
			}
			if got := e.srv.CountLoadBalancersNamed(e.token, "faulted"); got != map[bool]int{true: 1}[c.wantMade] {
				t.Errorf("%s: %d load balancers made", c.reason, got)
			}
			if e.srv.FaultsInjected() != 1 {
				t.Errorf("%s: %d faults injected, want 1", c.reason, e.srv.FaultsInjected())
			}
			// Max reached: the next request is served normally.
			if _, _, err := e.do.LoadBalancers.Create(context.Background(), regionalRequest("after")); err != nil {
				t.Errorf("%s: request after the fault budget: %v", c.reason, err)
			}
		})
	}
}

// TestFaultFilters: faults hit only the configured methods and paths, and the seeded draw is
// repeatable.
func TestFaultFilters(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sim.Options{RequestsPerMinute: -1})
	ctx := context.Background()
	e.srv.SetFaults(sim.Faults{Rate: 1, Methods: []string{"POST"}, Paths: []string{"/v2/droplets"}})
	if _, _, err := e.do.LoadBalancers.List(ctx, nil); err != nil {
		t.Errorf("GET of another path was faulted: %v", err)
	}
	if _, _, err := e.do.VPCs.Create(ctx, &godo.VPCCreateRequest{Name: "n", RegionSlug: "nyc3"}); err != nil {
		t.Errorf("POST of another path was faulted: %v", err)
	}
	if _, _, err := e.do.Droplets.Create(ctx, &godo.DropletCreateRequest{Name: "d", Region: "nyc3", Size: "s", Image: godo.DropletCreateImage{Slug: "x"}}); statusOf(err) != 500 {
		t.Errorf("matching request: %v, want 500", err)
	}
	draws := func() []bool {
		e.srv.SetFaults(sim.Faults{Rate: 0.5, Seed: 7, Paths: []string{"/v2/vpcs"}})
		var out []bool
		for range 20 {
			_, _, err := e.do.VPCs.List(ctx, nil)
			out = append(out, err != nil)
		}
		return out
	}
	first, second := draws(), draws()
	faulted := 0
	for i := range first {
		if first[i] != second[i] {
			t.Fatalf("draw %d differs between runs with the same seed", i)
		}
		if first[i] {
			faulted++
		}
	}
	if faulted == 0 || faulted == 20 {
		t.Errorf("rate 0.5 faulted %d of 20", faulted)
	}
	e.srv.ClearFaults()
	if _, _, err := e.do.VPCs.List(ctx, nil); err != nil {
		t.Errorf("after ClearFaults: %v", err)
	}
}

// TestAdminEndpoints drives faults, tokens, seeding and inspection over HTTP, as a separate
// process would.
func TestAdminEndpoints(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sim.Options{})
	ctx := context.Background()
	steps := []struct {
		reason string
		method string
		path   string
		body   string
		want   int
	}{
		{"set faults", "POST", "/_sim/faults", `{"rate":1,"kinds":["timeout_after_commit"],"paths":["/v2/load_balancers"],"methods":["POST"],"max":1}`, 204},
		{"reject an unknown kind", "POST", "/_sim/faults", `{"rate":1,"kinds":["meteor"]}`, 422},
		{"reject a bad rate", "POST", "/_sim/faults", `{"rate":2}`, 422},
		{"add a token", "POST", "/_sim/tokens", `{"token":"proc-token"}`, 204},
		{"seed a droplet", "POST", "/_sim/droplets", `{"token":"proc-token","name":"seeded","region":"lon1"}`, 201},
		{"seed for an unknown token", "POST", "/_sim/droplets", `{"token":"nobody","name":"x","region":"lon1"}`, 404},
	}
	for _, s := range steps {
		if resp := rawRequest(t, s.method, e.url+s.path, "", s.body); resp.StatusCode != s.want {
			t.Errorf("%s: status %d, want %d", s.reason, resp.StatusCode, s.want)
		}
	}
	// The first step's fault still applies: the create commits, the answer is a 504.
	if _, _, err := e.do.LoadBalancers.Create(ctx, regionalRequest("via-http")); statusOf(err) != http.StatusGatewayTimeout {
		t.Errorf("create under timeout_after_commit: %v", err)
	}
	var faults struct{ Injected int }
	_ = json.NewDecoder(rawRequest(t, "GET", e.url+"/_sim/faults", "", "").Body).Decode(&faults)
	if faults.Injected != 1 {
		t.Errorf("GET /_sim/faults injected %d, want 1", faults.Injected)
	}
	var snap sim.Snapshot
	if err := json.NewDecoder(rawRequest(t, "POST", e.url+"/_sim/snapshot", "", `{"token":"`+e.token+`"}`).Body).Decode(&snap); err != nil {
		t.Fatal(err)
	}
	if len(snap.LoadBalancers) != 1 || snap.LoadBalancers[0].Name != "via-http" {
		t.Errorf("snapshot load balancers %+v", snap.LoadBalancers)
	}
	var counters struct{ Requests map[string]int }
	_ = json.NewDecoder(rawRequest(t, "GET", e.url+"/_sim/requests", "", "").Body).Decode(&counters)
	if counters.Requests["POST /v2/load_balancers"] != 1 {
		t.Errorf("request counters %v", counters.Requests)
	}
	if resp := rawRequest(t, "DELETE", e.url+"/_sim/faults", "", ""); resp.StatusCode != 204 {
		t.Errorf("clear faults: %d", resp.StatusCode)
	}
	proc := godoClient(t, e.url, "proc-token")
	ds, _, err := proc.Droplets.ListByName(ctx, "seeded", &godo.ListOptions{})
	if err != nil || len(ds) != 1 || ds[0].Status != "active" {
		t.Errorf("seeded droplet seen as %v %v", ds, err)
	}
}

// TestIntrospection: snapshots are copies, counters are per route pattern and per account,
// and a renewed managed certificate moves its load balancers to the new id.
func TestIntrospection(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sim.Options{CertificateVerifyDelay: -1})
	ctx := context.Background()
	cert, _, err := e.do.Certificates.Create(ctx, &godo.CertificateRequest{Name: "le", Type: "lets_encrypt", DNSNames: []string{"a.example.com"}})
	if err != nil {
		t.Fatal(err)
	}
	req := regionalRequest("intro")
	req.ForwardingRules = []godo.ForwardingRule{{EntryProtocol: "https", EntryPort: 443, TargetProtocol: "http", TargetPort: 80, CertificateID: cert.ID}}
	lb, _, err := e.do.LoadBalancers.Create(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.do.LoadBalancers.Get(ctx, lb.ID); err != nil {
		t.Fatal(err)
	}
	snap, err := e.srv.Snapshot(e.token)
	if err != nil || len(snap.LoadBalancers) != 1 || len(snap.Certificates) != 1 || len(snap.VPCs) == 0 {
		t.Fatalf("snapshot %+v %v", snap, err)
	}
	snap.LoadBalancers[0].ForwardingRules[0].CertificateID = "scribbled"
	newID, err := e.srv.RenewCertificate(e.token, cert.ID)
	if err != nil || newID == cert.ID {
		t.Fatalf("renew: %q %v", newID, err)
	}
	got, _, err := e.do.LoadBalancers.Get(ctx, lb.ID)
	if err != nil || got.ForwardingRules[0].CertificateID != newID {
		t.Errorf("after renewal the rule names %v (%v), want %s", got.ForwardingRules, err, newID)
	}
	for _, counts := range []map[string]int{e.srv.Requests(), e.srv.RequestsFor(e.token)} {
		if counts["GET /v2/load_balancers/{id}"] != 2 || counts["POST /v2/load_balancers"] != 1 || counts["POST /v2/certificates"] != 1 {
			t.Errorf("counters %v", counts)
		}
	}
	e.srv.ResetRequests()
	if len(e.srv.Requests()) != 0 {
		t.Errorf("counters after reset: %v", e.srv.Requests())
	}
	if _, err := e.srv.Snapshot("nobody"); err == nil || !strings.Contains(err.Error(), "unknown token") {
		t.Errorf("snapshot of an unknown token: %v", err)
	}
	if err := e.srv.FailLoadBalancer(e.token, lb.ID); err != nil {
		t.Fatal(err)
	}
	if got, _, _ := e.do.LoadBalancers.Get(ctx, lb.ID); got.Status != "errored" {
		t.Errorf("failed load balancer reports %q", got.Status)
	}
}

// TestAcceptAnyToken: with AcceptAnyToken every token is an account of its own.
func TestAcceptAnyToken(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sim.Options{AcceptAnyToken: true})
	ctx := context.Background()
	a, b := godoClient(t, e.url, "first"), godoClient(t, e.url, "second")
	lb, _, err := a.LoadBalancers.Create(ctx, regionalRequest("x"))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.LoadBalancers.Get(ctx, lb.ID); statusOf(err) != 404 {
		t.Errorf("second token sees the first one's load balancer: %v", err)
	}
}
