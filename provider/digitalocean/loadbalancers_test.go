package digitalocean

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"better-compute.dev/compute/provider"
	"better-compute.dev/compute/provider/digitalocean/sim"
)

// TestRegionalLoadBalancerLifecycle goes through every method on the real clock: create (new,
// no address), poll until active with an address, find by name, update (full PUT), delete
// twice, and the not-found answers afterwards.
func TestRegionalLoadBalancerLifecycle(t *testing.T) {
	t.Parallel()
	e := newEnv(t, fastSim(), Options{}, false)
	lbs := e.p.LoadBalancers()
	leaf, key, err := sim.SelfSignedCertificate("shop.example.com")
	if err != nil {
		t.Fatal(err)
	}
	cert, err := e.p.Certificates().Create(bg(), provider.CertificateSpec{Name: "shop", PrivateKeyPEM: key, LeafCertPEM: leaf})
	if err != nil {
		t.Fatalf("certificate: %v", err)
	}
	m1, m2 := e.droplet(t, "web-1", "nyc3", ""), e.droplet(t, "web-2", "nyc3", "")
	defVPC, _ := e.srv.DefaultVPC(e.account.Token, "nyc3")
	spec := provider.LoadBalancerSpec{
		Name: "bc-plb-lifecycle", Scope: provider.ScopeRegional, Region: "nyc3", MachineIDs: []string{m1, m2},
		Forwarding: []provider.ForwardingRule{
			{EntryProtocol: "http", EntryPort: 80, TargetProtocol: "http", TargetPort: 8080},
			{EntryProtocol: "https", EntryPort: 443, TargetProtocol: "http", TargetPort: 8080, CertificateID: cert.ID},
		},
		HealthCheck:         &provider.HealthCheck{Protocol: "http", Port: 8080, Path: "/healthz", IntervalSeconds: 10, TimeoutSeconds: 5, HealthyThreshold: 3, UnhealthyThreshold: 3},
		StickySessions:      &provider.StickySessions{CookieName: "bc", TTLSeconds: 300},
		AllowSources:        []string{"10.0.0.0/8", "203.0.113.7"},
		DenySources:         []string{"198.51.100.0/24"},
		RedirectHTTPToHTTPS: true,
	}
	created, err := lbs.Create(bg(), spec)
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if created.Status != provider.LoadBalancerNew || created.Address != "" {
		t.Errorf("created as %s with address %q, want new without one", created.Status, created.Address)
	}
	var active *provider.LoadBalancer
	poll(t, "active with an address", func() (bool, error) {
		lb, err := lbs.Get(bg(), created.ID)
		active = lb
		return err == nil && lb.Status == provider.LoadBalancerActive && lb.Address != "" && lb.AddressV6 != "", err
	})
	want := spec
	want.NetworkID = defVPC
	// The settings the spec left out are reported at the provider's defaults.
	want.SizeUnit, want.HTTPIdleTimeoutSeconds = 1, 60
	want.Network, want.NetworkStack, want.TLSCipherPolicy = "external", "ipv4", "default"
	if diff := cmp.Diff(want, active.Spec); diff != "" {
		t.Errorf("reported spec differs (-want +got):\n%s", diff)
	}
	if active.Region != "nyc3" || active.NetworkID != defVPC || len(active.MachineIDs) != 2 {
		t.Errorf("observation %+v", active)
	}
	found, err := lbs.FindByName(bg(), spec.Name)
	if err != nil || found.ID != created.ID {
		t.Fatalf("find by name: %v %v", found, err)
	}

	updated := spec
	updated.MachineIDs = []string{m2}
	updated.StickySessions = nil
	updated.AllowSources, updated.DenySources = nil, nil
	got, err := lbs.Update(bg(), created.ID, updated)
	if err != nil {
		t.Fatalf("update: %v", err)
	}
	if got.Spec.StickySessions != nil || got.Spec.AllowSources != nil || len(got.MachineIDs) != 1 || got.MachineIDs[0] != m2 {
		t.Errorf("update did not replace the whole state: %+v", got.Spec)
	}

	if err := lbs.Delete(bg(), created.ID); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if err := lbs.Delete(bg(), created.ID); err != nil {
		t.Errorf("second delete: %v, want nil", err)
	}
	_, err = lbs.Get(bg(), created.ID)
	wantKind(t, "get after delete", err, provider.ErrNotFound)
	_, err = lbs.FindByName(bg(), spec.Name)
	wantKind(t, "find after delete", err, provider.ErrNotFound)
}

// TestGlobalLoadBalancer: GLOBAL with target_load_balancer_ids, glb_settings derived from the
// first forwarding rule's target, and domains.
func TestGlobalLoadBalancer(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sim.Options{}, Options{}, true)
	lbs := e.p.LoadBalancers()
	var targets []string
	for _, region := range []string{"nyc3", "ams3"} {
		lb, err := lbs.Create(bg(), provider.LoadBalancerSpec{Name: "edge-" + region, Region: region,
			Forwarding: []provider.ForwardingRule{{EntryProtocol: "http", EntryPort: 80, TargetProtocol: "http", TargetPort: 80}}})
		if err != nil {
			t.Fatal(err)
		}
		targets = append(targets, lb.ID)
	}
	spec := provider.LoadBalancerSpec{
		Name: "bc-glb", Scope: provider.ScopeGlobal, TargetLoadBalancerIDs: targets,
		Forwarding: []provider.ForwardingRule{{EntryProtocol: "http", EntryPort: 80, TargetProtocol: "http", TargetPort: 80}},
		Domains:    []provider.Domain{{Name: "www.example.com"}},
	}
	glb, err := lbs.Create(bg(), spec)
	if err != nil {
		t.Fatalf("create global: %v", err)
	}
	if glb.Spec.Scope != provider.ScopeGlobal || glb.Region != "" || !cmp.Equal(glb.TargetLoadBalancerIDs, targets) ||
		!cmp.Equal(glb.Spec.Domains, spec.Domains) {
		t.Errorf("global observed as %+v", glb)
	}
	snap, _ := e.srv.Snapshot(e.account.Token)
	sent := snap.LoadBalancers[len(snap.LoadBalancers)-1]
	if sent.Type != "GLOBAL" || sent.GLBSettings == nil || sent.GLBSettings.TargetProtocol != "http" || sent.GLBSettings.TargetPort != 80 {
		t.Errorf("provider holds %+v / %+v", sent.Type, sent.GLBSettings)
	}
	err = lbs.Delete(bg(), targets[0])
	wantKind(t, "deleting a target of a global load balancer", err, provider.ErrBusy)
}

// TestLoadBalancerErrors maps DigitalOcean's refusals (and local ones) to the sentinels; local
// refusals send nothing.
func TestLoadBalancerErrors(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sim.Options{}, Options{}, true)
	lbs := e.p.LoadBalancers()
	tok := e.account.Token
	vpc, err := e.srv.CreateVPC(tok, "tenant", "nyc3", "")
	if err != nil {
		t.Fatal(err)
	}
	inNYC := e.droplet(t, "nyc", "nyc3", "")
	inSFO := e.droplet(t, "sfo", "sfo3", "")
	inVPC := e.droplet(t, "vpc", "nyc3", vpc.ID)
	base := func(machines ...string) provider.LoadBalancerSpec {
		return provider.LoadBalancerSpec{Name: "checked", Region: "nyc3", MachineIDs: machines,
			Forwarding: []provider.ForwardingRule{{EntryProtocol: "http", EntryPort: 80, TargetProtocol: "http", TargetPort: 80}}}
	}
	cases := []struct {
		reason string
		spec   provider.LoadBalancerSpec
		want   error
		local  bool // refused before any request
	}{
		{"droplet in another region", base(inSFO), provider.ErrInvalid, false},
		{"droplet in another VPC", base(inVPC), provider.ErrInvalid, false},
		{"droplet that does not exist", base("999999999"), provider.ErrInvalid, false},
		{"machine id that is no droplet id", base("i-abc"), provider.ErrInvalid, true},
		{"bad source range", func() provider.LoadBalancerSpec { s := base(inNYC); s.AllowSources = []string{"not-an-ip"}; return s }(), provider.ErrInvalid, true},
		{"https without certificate", func() provider.LoadBalancerSpec {
			s := base(inNYC)
			s.Forwarding = []provider.ForwardingRule{{EntryProtocol: "https", EntryPort: 443, TargetProtocol: "http", TargetPort: 80}}
			return s
		}(), provider.ErrInvalid, false},
		{"global with machines", func() provider.LoadBalancerSpec { s := base(inNYC); s.Scope = provider.ScopeGlobal; return s }(), provider.ErrInvalid, true},
		{"global over tcp", provider.LoadBalancerSpec{Name: "g", Scope: provider.ScopeGlobal, TargetLoadBalancerIDs: []string{"x"},
			Forwarding: []provider.ForwardingRule{{EntryProtocol: "tcp", EntryPort: 80, TargetProtocol: "tcp", TargetPort: 80}}}, provider.ErrInvalid, true},
		{"unknown scope", func() provider.LoadBalancerSpec { s := base(); s.Scope = "planetary"; return s }(), provider.ErrInvalid, true},
	}
	for _, c := range cases {
		before := e.srv.Requests()["POST /v2/load_balancers"]
		_, err := lbs.Create(bg(), c.spec)
		wantKind(t, c.reason, err, c.want)
		if provider.Retryable(err) {
			t.Errorf("%s: %v is retryable", c.reason, err)
		}
		if sent := e.srv.Requests()["POST /v2/load_balancers"] - before; (sent == 0) != c.local {
			t.Errorf("%s: %d requests sent, local refusal %v", c.reason, sent, c.local)
		}
	}

	lb, err := lbs.Create(bg(), base(inNYC))
	if err != nil {
		t.Fatal(err)
	}
	_, err = lbs.Update(bg(), lb.ID, base(inNYC))
	wantKind(t, "update while still new", err, provider.ErrBusy)
	if !provider.Retryable(err) {
		t.Errorf("busy is not retryable: %v", err)
	}
	e.clock.Advance(sim.DefaultLoadBalancerActiveDelay)
	if _, err := lbs.Update(bg(), lb.ID, base(inNYC)); err != nil {
		t.Errorf("update once active: %v", err)
	}
	_, err = lbs.Update(bg(), lb.ID, base(inNYC))
	wantKind(t, "update while the previous update is processed", err, provider.ErrBusy)
	e.clock.Advance(sim.DefaultLoadBalancerUpdateDelay)
	moved := base(inNYC)
	moved.Region = "sfo3"
	_, err = lbs.Update(bg(), lb.ID, moved)
	wantKind(t, "moving to another region", err, provider.ErrInvalid)
	_, err = lbs.Get(bg(), "2b1f0a52-0000-4000-8000-000000000000")
	wantKind(t, "unknown id", err, provider.ErrNotFound)
	_, err = lbs.Get(bg(), "../droplets")
	wantKind(t, "id that would change the path", err, provider.ErrInvalid)
	_, err = lbs.FindByName(bg(), "")
	wantKind(t, "empty name", err, provider.ErrInvalid)
}

// TestAdoptionAfterTimeoutAfterCommit: the create is made at the provider but its answer is a
// timeout; FindByName then finds exactly the one load balancer, so a retry adopts instead of
// creating a second.
func TestAdoptionAfterTimeoutAfterCommit(t *testing.T) {
	t.Parallel()
	cases := []struct {
		reason string
		kind   sim.FaultKind
	}{
		{"504 after the change", sim.FaultTimeoutAfterCommit},
		{"connection dropped after the change", sim.FaultResetAfterCommit},
	}
	for _, c := range cases {
		t.Run(string(c.kind), func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, sim.Options{}, Options{}, true)
			e.srv.SetFaults(sim.Faults{Rate: 1, Kinds: []sim.FaultKind{c.kind}, Methods: []string{"POST"}, Paths: []string{"/v2/load_balancers"}, Max: 1})
			spec := provider.LoadBalancerSpec{Name: "bc-plb-adopt", Region: "fra1",
				Forwarding: []provider.ForwardingRule{{EntryProtocol: "tcp", EntryPort: 22, TargetProtocol: "tcp", TargetPort: 22}}}
			_, err := e.p.LoadBalancers().Create(bg(), spec)
			wantKind(t, c.reason, err, provider.ErrTransient)
			adopted, err := e.p.LoadBalancers().FindByName(bg(), spec.Name)
			if err != nil {
				t.Fatalf("%s: find: %v", c.reason, err)
			}
			if adopted.Name != spec.Name || e.srv.CountLoadBalancersNamed(e.account.Token, spec.Name) != 1 {
				t.Errorf("%s: adopted %+v, %d at the provider", c.reason, adopted, e.srv.CountLoadBalancersNamed(e.account.Token, spec.Name))
			}
		})
	}
}

// TestFindByNameDuplicates: among duplicates (which DigitalOcean allows) the oldest is
// returned, and the names filter keeps a miss to one request.
func TestFindByNameDuplicates(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sim.Options{RequestsPerMinute: -1}, Options{PageSize: 2, RequestsPerMinute: 10000}, true)
	lbs := e.p.LoadBalancers()
	var first string
	for i := range 5 {
		lb, err := lbs.Create(bg(), provider.LoadBalancerSpec{Name: "twin", Region: "lon1",
			Forwarding: []provider.ForwardingRule{{EntryProtocol: "http", EntryPort: 80, TargetProtocol: "http", TargetPort: 80}}})
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = lb.ID
		}
	}
	got, err := lbs.FindByName(bg(), "twin")
	if err != nil || got.ID != first {
		t.Errorf("find: %v %v, want the oldest %s", got, err, first)
	}
	e.srv.ResetRequests()
	_, err = lbs.FindByName(bg(), "nobody")
	if !errors.Is(err, provider.ErrNotFound) || e.srv.Requests()["GET /v2/load_balancers"] != 1 {
		t.Errorf("missing name: %v after %v", err, e.srv.Requests())
	}
}
