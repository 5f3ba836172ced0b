package sim_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/digitalocean/godo"

	"better-compute.dev/compute/provider/digitalocean/sim"
)

// TestLoadBalancerLifecycle: created new without an address, active after the active delay,
// the ip and ipv6 after the ip delay, then deleted.
func TestLoadBalancerLifecycle(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sim.Options{LoadBalancerActiveDelay: 2 * time.Second, LoadBalancerIPDelay: 3 * time.Second})
	ctx := context.Background()
	d := e.seedDroplet(t, sim.DropletSeed{Name: "web-1", Region: "nyc3"})
	lb, resp, err := e.do.LoadBalancers.Create(ctx, regionalRequest("lb-1", d.ID))
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if resp.StatusCode != http.StatusAccepted {
		t.Errorf("create answered %d, want 202", resp.StatusCode)
	}
	defVPC, _ := e.srv.DefaultVPC(e.token, "nyc3")
	checks := []struct {
		reason     string
		advance    time.Duration
		wantStatus string
		wantIP     bool
	}{
		{reason: "just created", wantStatus: "new"},
		{reason: "active", advance: 2 * time.Second, wantStatus: "active"},
		{reason: "address assigned", advance: time.Second, wantStatus: "active", wantIP: true},
	}
	for _, c := range checks {
		e.clock.Advance(c.advance)
		got, _, err := e.do.LoadBalancers.Get(ctx, lb.ID)
		if err != nil {
			t.Fatalf("%s: get: %v", c.reason, err)
		}
		if got.Status != c.wantStatus || (got.IP != "") != c.wantIP || (got.IPv6 != "") != c.wantIP {
			t.Errorf("%s: status %q ip %q ipv6 %q", c.reason, got.Status, got.IP, got.IPv6)
		}
		if got.Type != "REGIONAL" || got.VPCUUID != defVPC || got.Region.Slug != "nyc3" || len(got.DropletIDs) != 1 {
			t.Errorf("%s: placement %s %s %v %v, want REGIONAL in nyc3's default VPC", c.reason, got.Type, got.VPCUUID, got.Region, got.DropletIDs)
		}
		if got.HealthCheck == nil || got.HealthCheck.Protocol != "http" || got.StickySessions.Type != "none" {
			t.Errorf("%s: defaults not applied: %+v %+v", c.reason, got.HealthCheck, got.StickySessions)
		}
	}
	resp, err = e.do.LoadBalancers.Delete(ctx, lb.ID)
	if err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("delete: %v", err)
	}
	if _, _, err := e.do.LoadBalancers.Get(ctx, lb.ID); statusOf(err) != http.StatusNotFound {
		t.Errorf("get after delete: %v, want 404", err)
	}
	if _, err := e.do.LoadBalancers.Delete(ctx, lb.ID); statusOf(err) != http.StatusNotFound {
		t.Errorf("second delete: %v, want 404", err)
	}
}

// TestLoadBalancerChecks runs DigitalOcean's validation on creates that must be refused.
func TestLoadBalancerChecks(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sim.Options{CertificateVerifyDelay: time.Hour})
	ctx := context.Background()
	nyc := e.seedDroplet(t, sim.DropletSeed{Name: "nyc", Region: "nyc3"})
	sfo := e.seedDroplet(t, sim.DropletSeed{Name: "sfo", Region: "sfo3"})
	vpc, err := e.srv.CreateVPC(e.token, "tenant-net", "nyc3", "")
	if err != nil {
		t.Fatal(err)
	}
	sfoVPC, _ := e.srv.DefaultVPC(e.token, "sfo3")
	inVPC := e.seedDroplet(t, sim.DropletSeed{Name: "in-vpc", Region: "nyc3", VPCUUID: vpc.ID})
	pending, _, err := e.do.Certificates.Create(ctx, &godo.CertificateRequest{Name: "le", Type: "lets_encrypt", DNSNames: []string{"a.example.com"}})
	if err != nil {
		t.Fatal(err)
	}
	https := func(cert string, passthrough bool) []godo.ForwardingRule {
		return []godo.ForwardingRule{{EntryProtocol: "https", EntryPort: 443, TargetProtocol: "https", TargetPort: 443,
			CertificateID: cert, TlsPassthrough: passthrough}}
	}
	cases := []struct {
		reason string
		mutate func(r *godo.LoadBalancerRequest)
		want   string // substring of the 422 message; "" means accepted
	}{
		{"valid request", func(*godo.LoadBalancerRequest) {}, ""},
		{"droplet_ids and tag together", func(r *godo.LoadBalancerRequest) { r.Tag = "web" }, "mutually exclusive"},
		{"unknown droplet", func(r *godo.LoadBalancerRequest) { r.DropletIDs = []int{12345} }, "does not exist"},
		{"droplet in another region", func(r *godo.LoadBalancerRequest) { r.DropletIDs = []int{sfo.ID} }, "is in region sfo3"},
		{"droplet in another VPC", func(r *godo.LoadBalancerRequest) { r.DropletIDs = []int{inVPC.ID} }, "not in the load balancer's VPC"},
		{"droplet in the named VPC", func(r *godo.LoadBalancerRequest) { r.VPCUUID, r.DropletIDs = vpc.ID, []int{inVPC.ID} }, ""},
		{"VPC of another region", func(r *godo.LoadBalancerRequest) { r.VPCUUID = sfoVPC }, "is in region sfo3"},
		{"unknown VPC", func(r *godo.LoadBalancerRequest) { r.VPCUUID = "nope" }, "does not exist"},
		{"no region", func(r *godo.LoadBalancerRequest) { r.Region = "" }, "region is required"},
		{"unknown region", func(r *godo.LoadBalancerRequest) { r.Region = "mars1" }, "not available"},
		{"unknown type", func(r *godo.LoadBalancerRequest) { r.Type = "CLASSIC" }, "type must be"},
		{"no name", func(r *godo.LoadBalancerRequest) { r.Name = "" }, "name is required"},
		{"no forwarding rules", func(r *godo.LoadBalancerRequest) { r.ForwardingRules = nil }, "forwarding_rules is required"},
		{"https without certificate", func(r *godo.LoadBalancerRequest) { r.ForwardingRules = https("", false) }, "needs a certificate_id"},
		{"https with unknown certificate", func(r *godo.LoadBalancerRequest) { r.ForwardingRules = https("nope", false) }, "does not exist"},
		{"https with pending certificate", func(r *godo.LoadBalancerRequest) { r.ForwardingRules = https(pending.ID, false) }, "is pending"},
		{"https passthrough", func(r *godo.LoadBalancerRequest) { r.ForwardingRules = https("", true) }, ""},
		{"certificate on a tcp rule", func(r *godo.LoadBalancerRequest) {
			r.ForwardingRules = []godo.ForwardingRule{{EntryProtocol: "tcp", EntryPort: 5432, TargetProtocol: "tcp", TargetPort: 5432, CertificateID: pending.ID}}
		}, "only valid for https"},
		{"tcp to http", func(r *godo.LoadBalancerRequest) {
			r.ForwardingRules = []godo.ForwardingRule{{EntryProtocol: "tcp", EntryPort: 80, TargetProtocol: "http", TargetPort: 80}}
		}, "must forward to tcp"},
		{"duplicate entry port", func(r *godo.LoadBalancerRequest) {
			r.ForwardingRules = append(r.ForwardingRules, r.ForwardingRules[0])
		}, "more than one forwarding rule"},
		{"bad firewall entry", func(r *godo.LoadBalancerRequest) { r.Firewall = &godo.LBFirewall{Allow: []string{"1.2.3.4"}} }, "must look like"},
		{"bad cidr", func(r *godo.LoadBalancerRequest) { r.Firewall = &godo.LBFirewall{Deny: []string{"cidr:10.0.0.0/33"}} }, "must look like"},
		{"good firewall", func(r *godo.LoadBalancerRequest) {
			r.Firewall = &godo.LBFirewall{Allow: []string{"ip:1.2.3.4", "cidr:10.0.0.0/8"}, Deny: []string{"ip:2001:db8::1"}}
		}, ""},
		{"health check interval too short", func(r *godo.LoadBalancerRequest) { r.HealthCheck = &godo.HealthCheck{CheckIntervalSeconds: 1} }, "check_interval_seconds"},
		{"cookies without a name", func(r *godo.LoadBalancerRequest) {
			r.StickySessions = &godo.StickySessions{Type: "cookies", CookieTtlSeconds: 60}
		}, "cookie_name"},
		{"targets on a regional load balancer", func(r *godo.LoadBalancerRequest) { r.TargetLoadBalancerIDs = []string{"x"} }, "only valid for GLOBAL"},
		{"global without targets", func(r *godo.LoadBalancerRequest) {
			r.Type, r.DropletIDs = "GLOBAL", nil
		}, "target_load_balancer_ids is required"},
		{"global with droplets", func(r *godo.LoadBalancerRequest) { r.Type = "GLOBAL" }, "not valid for GLOBAL"},
	}
	for _, c := range cases {
		req := regionalRequest("checked", nyc.ID)
		c.mutate(req)
		_, _, err := e.do.LoadBalancers.Create(ctx, req)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: refused: %v", c.reason, err)
		case c.want != "" && (statusOf(err) != http.StatusUnprocessableEntity || !strings.Contains(messageOf(err), c.want)):
			t.Errorf("%s: got %v, want 422 containing %q", c.reason, err, c.want)
		}
	}
}

// TestGlobalLoadBalancer: targets must exist and be regional; glb_settings and domains are
// kept; a targeted regional load balancer cannot be deleted.
func TestGlobalLoadBalancer(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sim.Options{})
	ctx := context.Background()
	regional, _, err := e.do.LoadBalancers.Create(ctx, regionalRequest("edge-nyc"))
	if err != nil {
		t.Fatal(err)
	}
	req := &godo.LoadBalancerRequest{
		Name: "global", Type: "GLOBAL", TargetLoadBalancerIDs: []string{regional.ID},
		ForwardingRules: []godo.ForwardingRule{{EntryProtocol: "http", EntryPort: 80, TargetProtocol: "http", TargetPort: 80}},
		GLBSettings:     &godo.GLBSettings{TargetProtocol: "http", TargetPort: 80},
		Domains:         []*godo.LBDomain{{Name: "www.example.com"}},
	}
	glb, _, err := e.do.LoadBalancers.Create(ctx, req)
	if err != nil {
		t.Fatalf("create global: %v", err)
	}
	if glb.Type != "GLOBAL" || glb.Region != nil || glb.GLBSettings.TargetProtocol != "http" || len(glb.Domains) != 1 {
		t.Errorf("global reported as %+v", glb)
	}
	cases := []struct {
		reason string
		mutate func(r *godo.LoadBalancerRequest)
		want   string
	}{
		{"unknown target", func(r *godo.LoadBalancerRequest) { r.TargetLoadBalancerIDs = []string{"nope"} }, "does not exist"},
		{"global target", func(r *godo.LoadBalancerRequest) { r.TargetLoadBalancerIDs = []string{glb.ID} }, "targets must be regional"},
		{"no glb_settings", func(r *godo.LoadBalancerRequest) { r.GLBSettings = nil }, "glb_settings is required"},
		{"tcp glb target", func(r *godo.LoadBalancerRequest) {
			r.GLBSettings = &godo.GLBSettings{TargetProtocol: "tcp", TargetPort: 80}
		}, "target_protocol"},
		{"upper-case glb target", func(r *godo.LoadBalancerRequest) {
			r.GLBSettings = &godo.GLBSettings{TargetProtocol: "HTTP", TargetPort: 80}
		}, "target_protocol"},
		{"domain with unknown certificate", func(r *godo.LoadBalancerRequest) {
			r.Domains = []*godo.LBDomain{{Name: "a.example.com", CertificateID: "nope"}}
		}, "does not exist"},
	}
	for _, c := range cases {
		bad := *req
		c.mutate(&bad)
		if _, _, err := e.do.LoadBalancers.Create(ctx, &bad); statusOf(err) != 422 || !strings.Contains(messageOf(err), c.want) {
			t.Errorf("%s: got %v, want 422 containing %q", c.reason, err, c.want)
		}
	}
	if _, err := e.do.LoadBalancers.Delete(ctx, regional.ID); statusOf(err) != http.StatusConflict {
		t.Errorf("delete of a global target: %v, want 409", err)
	}
}

// TestUpdateReplacesAndBusy: a PUT during processing is refused with DigitalOcean's 403; a
// later PUT replaces the whole object (what it omits is reset) and makes it busy again.
func TestUpdateReplacesAndBusy(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sim.Options{LoadBalancerActiveDelay: 2 * time.Second, LoadBalancerUpdateDelay: time.Second})
	ctx := context.Background()
	req := regionalRequest("upd")
	req.StickySessions = &godo.StickySessions{Type: "cookies", CookieName: "bc", CookieTtlSeconds: 60}
	req.Firewall = &godo.LBFirewall{Allow: []string{"ip:1.2.3.4"}}
	lb, _, err := e.do.LoadBalancers.Create(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	plain := regionalRequest("upd-renamed")
	steps := []struct {
		reason     string
		advance    time.Duration
		req        *godo.LoadBalancerRequest
		wantStatus int
		wantMsg    string
	}{
		{"still new", 0, plain, 403, "Load balancer can't be updated while it processes previous actions"},
		{"active", 2 * time.Second, plain, 200, ""},
		{"processing the update", 0, plain, 403, "processes previous actions"},
		{"region cannot change", time.Second, func() *godo.LoadBalancerRequest { r := regionalRequest("x"); r.Region = "sfo3"; return r }(), 422, "region cannot be changed"},
		{"type cannot change", 0, func() *godo.LoadBalancerRequest { r := regionalRequest("x"); r.Type = "REGIONAL_NETWORK"; return r }(), 422, "type cannot be changed"},
	}
	for _, s := range steps {
		e.clock.Advance(s.advance)
		got, resp, err := e.do.LoadBalancers.Update(ctx, lb.ID, s.req)
		status := statusOf(err)
		if err == nil {
			status = resp.StatusCode
		}
		if status != s.wantStatus || !strings.Contains(messageOf(err), s.wantMsg) {
			t.Fatalf("%s: %d %v, want %d %q", s.reason, status, err, s.wantStatus, s.wantMsg)
		}
		if err == nil && (got.Name != "upd-renamed" || got.StickySessions.Type != "none" || len(got.Firewall.Allow)+len(got.Firewall.Deny) != 0) {
			t.Errorf("%s: PUT did not replace: name %q sticky %+v firewall %+v", s.reason, got.Name, got.StickySessions, got.Firewall)
		}
	}
}

// TestDropletEndpoints adds and removes droplets with the same placement checks as create.
func TestDropletEndpoints(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sim.Options{LoadBalancerActiveDelay: -1, LoadBalancerUpdateDelay: -1})
	ctx := context.Background()
	a := e.seedDroplet(t, sim.DropletSeed{Name: "a", Region: "nyc3"})
	b := e.seedDroplet(t, sim.DropletSeed{Name: "b", Region: "nyc3"})
	far := e.seedDroplet(t, sim.DropletSeed{Name: "far", Region: "ams3"})
	lb, _, err := e.do.LoadBalancers.Create(ctx, regionalRequest("d", a.ID))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.do.LoadBalancers.AddDroplets(ctx, lb.ID, b.ID); err != nil {
		t.Fatalf("add: %v", err)
	}
	if _, err := e.do.LoadBalancers.AddDroplets(ctx, lb.ID, far.ID); statusOf(err) != 422 {
		t.Errorf("add a droplet of another region: %v, want 422", err)
	}
	if _, err := e.do.LoadBalancers.RemoveDroplets(ctx, lb.ID, a.ID); err != nil {
		t.Fatalf("remove: %v", err)
	}
	if _, err := e.do.Droplets.Delete(ctx, b.ID); err != nil {
		t.Fatalf("delete droplet: %v", err)
	}
	got, _, err := e.do.LoadBalancers.Get(ctx, lb.ID)
	if err != nil || len(got.DropletIDs) != 0 {
		t.Errorf("after removing a and destroying b: %v %v, want no droplets", got.DropletIDs, err)
	}
}

// TestDuplicateNamesAndPagination: names are not unique, the names filter finds every copy,
// and lists page with godo's links.
func TestDuplicateNamesAndPagination(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sim.Options{RequestsPerMinute: -1})
	ctx := context.Background()
	for i := range 45 {
		name := "bulk"
		if i%15 == 0 {
			name = "twin"
		}
		if _, _, err := e.do.LoadBalancers.Create(ctx, regionalRequest(name)); err != nil {
			t.Fatal(err)
		}
	}
	if got := e.srv.CountLoadBalancersNamed(e.token, "twin"); got != 3 {
		t.Errorf("twins counted %d, want 3", got)
	}
	twins, _, err := e.do.LoadBalancers.ListByNames(ctx, []string{"twin"}, &godo.ListOptions{PerPage: 200})
	if err != nil || len(twins) != 3 {
		t.Errorf("ListByNames: %d %v, want 3", len(twins), err)
	}
	var seen []string
	opt := &godo.ListOptions{Page: 1, PerPage: 20}
	for pages := 0; ; pages++ {
		if pages > 5 {
			t.Fatal("pagination does not end")
		}
		items, resp, err := e.do.LoadBalancers.List(ctx, opt)
		if err != nil {
			t.Fatal(err)
		}
		if resp.Meta == nil || resp.Meta.Total != 45 {
			t.Errorf("page %d: meta %+v, want total 45", opt.Page, resp.Meta)
		}
		if cur, err := resp.Links.CurrentPage(); err != nil || cur != opt.Page {
			t.Errorf("page %d: CurrentPage %d %v", opt.Page, cur, err)
		}
		for _, lb := range items {
			seen = append(seen, lb.ID)
		}
		if resp.Links.IsLastPage() {
			break
		}
		opt.Page++
	}
	if len(seen) != 45 || opt.Page != 3 {
		t.Errorf("listed %d over %d pages, want 45 over 3", len(seen), opt.Page)
	}
}
