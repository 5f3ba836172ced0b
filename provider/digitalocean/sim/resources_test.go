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

// TestAuthentication: a missing or unknown token is 401 with DigitalOcean's body, still with
// rate headers; accounts do not see each other's resources.
func TestAuthentication(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sim.Options{})
	cases := []struct {
		reason string
		token  string
		want   int
	}{
		{"no token", "", http.StatusUnauthorized},
		{"unknown token", "not-an-account", http.StatusUnauthorized},
		{"known token", e.token, http.StatusOK},
	}
	for _, c := range cases {
		resp := rawRequest(t, http.MethodGet, e.url+"/v2/droplets", c.token, "")
		if resp.StatusCode != c.want {
			t.Errorf("%s: status %d, want %d", c.reason, resp.StatusCode, c.want)
		}
		if resp.Header.Get("ratelimit-limit") == "" {
			t.Errorf("%s: no rate headers", c.reason)
		}
		if c.want == http.StatusUnauthorized {
			var body map[string]string
			_ = json.NewDecoder(resp.Body).Decode(&body)
			if body["id"] != "unauthorized" || body["message"] == "" || body["request_id"] == "" {
				t.Errorf("%s: body %v", c.reason, body)
			}
		}
	}
	ctx := context.Background()
	lb, _, err := e.do.LoadBalancers.Create(ctx, regionalRequest("mine"))
	if err != nil {
		t.Fatal(err)
	}
	e.srv.AddToken("tenant-b")
	if _, _, err := godoClient(t, e.url, "tenant-b").LoadBalancers.Get(ctx, lb.ID); statusOf(err) != http.StatusNotFound {
		t.Errorf("another account read the load balancer: %v", err)
	}
	if resp := rawRequest(t, http.MethodGet, e.url+"/v2/nothing-here", e.token, ""); resp.StatusCode != http.StatusNotFound {
		t.Errorf("unknown route: %d, want 404", resp.StatusCode)
	}
}

// TestDroplets: create (new, then active), get, the name filter, delete.
func TestDroplets(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sim.Options{DropletActiveDelay: time.Second})
	ctx := context.Background()
	d, resp, err := e.do.Droplets.Create(ctx, &godo.DropletCreateRequest{Name: "m-1", Region: "fra1", Size: "s-1vcpu-1gb",
		Image: godo.DropletCreateImage{Slug: "ubuntu-24-04-x64"}})
	if err != nil || resp.StatusCode != http.StatusAccepted || d.Status != "new" {
		t.Fatalf("create: %v %v", d, err)
	}
	defVPC, _ := e.srv.DefaultVPC(e.token, "fra1")
	if d.VPCUUID != defVPC {
		t.Errorf("vpc %s, want fra1's default %s", d.VPCUUID, defVPC)
	}
	if _, _, err := e.do.Droplets.Create(ctx, &godo.DropletCreateRequest{Name: "m-2", Region: "fra1", Size: "s-1vcpu-1gb",
		Image: godo.DropletCreateImage{ID: 42}}); err != nil {
		t.Fatalf("create by image id: %v", err)
	}
	bad := []struct {
		reason string
		req    godo.DropletCreateRequest
	}{
		{"bad name", godo.DropletCreateRequest{Name: "no spaces", Region: "fra1", Size: "s", Image: godo.DropletCreateImage{Slug: "x"}}},
		{"no image", godo.DropletCreateRequest{Name: "ok", Region: "fra1", Size: "s"}},
		{"unknown region", godo.DropletCreateRequest{Name: "ok", Region: "xx1", Size: "s", Image: godo.DropletCreateImage{Slug: "x"}}},
		{"VPC of another region", godo.DropletCreateRequest{Name: "ok", Region: "nyc3", Size: "s", Image: godo.DropletCreateImage{Slug: "x"}, VPCUUID: defVPC}},
	}
	for _, b := range bad {
		if _, _, err := e.do.Droplets.Create(ctx, &b.req); statusOf(err) != 422 {
			t.Errorf("%s: %v, want 422", b.reason, err)
		}
	}
	e.clock.Advance(time.Second)
	got, _, err := e.do.Droplets.Get(ctx, d.ID)
	if err != nil || got.Status != "active" {
		t.Errorf("after the delay: %v %v, want active", got, err)
	}
	byName, _, err := e.do.Droplets.ListByName(ctx, "m-1", &godo.ListOptions{PerPage: 50})
	if err != nil || len(byName) != 1 || byName[0].ID != d.ID {
		t.Errorf("ListByName: %v %v", byName, err)
	}
	if _, err := e.do.Droplets.Delete(ctx, d.ID); err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.do.Droplets.Get(ctx, d.ID); statusOf(err) != 404 {
		t.Errorf("get after delete: %v", err)
	}
}

// TestVPCs: a default VPC per region, create with a free or a given range, the checks, and
// the delete rules (default 403, members 409).
func TestVPCs(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sim.Options{})
	ctx := context.Background()
	all, _, err := e.do.VPCs.List(ctx, &godo.ListOptions{PerPage: 200})
	if err != nil {
		t.Fatal(err)
	}
	defaults := 0
	for _, v := range all {
		if v.Default {
			defaults++
		}
	}
	if defaults == 0 || defaults != len(all) {
		t.Errorf("a new account has %d VPCs, %d default; want only defaults", len(all), defaults)
	}
	v, resp, err := e.do.VPCs.Create(ctx, &godo.VPCCreateRequest{Name: "net-a", RegionSlug: "nyc3", IPRange: "10.200.0.0/24"})
	if err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("create: %v", err)
	}
	auto, _, err := e.do.VPCs.Create(ctx, &godo.VPCCreateRequest{Name: "net-b", RegionSlug: "nyc3"})
	if err != nil || auto.IPRange == "" {
		t.Fatalf("create with a free range: %v %v", auto, err)
	}
	bad := []struct {
		reason string
		req    godo.VPCCreateRequest
		want   string
	}{
		{"duplicate name", godo.VPCCreateRequest{Name: "net-a", RegionSlug: "nyc3"}, "already exists"},
		{"overlapping range", godo.VPCCreateRequest{Name: "net-c", RegionSlug: "nyc3", IPRange: "10.200.0.0/16"}, "overlaps"},
		{"public range", godo.VPCCreateRequest{Name: "net-d", RegionSlug: "nyc3", IPRange: "8.8.0.0/16"}, "must be within"},
		{"not a CIDR", godo.VPCCreateRequest{Name: "net-e", RegionSlug: "nyc3", IPRange: "10.1.2.3"}, "not a valid"},
		{"no region", godo.VPCCreateRequest{Name: "net-f"}, "region is required"},
	}
	for _, b := range bad {
		if _, _, err := e.do.VPCs.Create(ctx, &b.req); statusOf(err) != 422 || !strings.Contains(messageOf(err), b.want) {
			t.Errorf("%s: %v, want 422 with %q", b.reason, err, b.want)
		}
	}
	def, _ := e.srv.DefaultVPC(e.token, "nyc3")
	if _, err := e.do.VPCs.Delete(ctx, def); statusOf(err) != http.StatusForbidden {
		t.Errorf("delete default: %v, want 403", err)
	}
	e.seedDroplet(t, sim.DropletSeed{Name: "member", Region: "nyc3", VPCUUID: v.ID})
	if _, err := e.do.VPCs.Delete(ctx, v.ID); statusOf(err) != http.StatusConflict || messageOf(err) != "Can not delete VPC with members" {
		t.Errorf("delete with members: %v, want 409", err)
	}
	if _, err := e.do.VPCs.Delete(ctx, auto.ID); err != nil {
		t.Errorf("delete empty VPC: %v", err)
	}
	if _, _, err := e.do.VPCs.Get(ctx, auto.ID); statusOf(err) != 404 {
		t.Errorf("get after delete: %v", err)
	}
}

// TestCertificates: custom PEM is checked and verified at once; lets_encrypt is pending, then
// verified (or error for a failing name); names are unique; one in use cannot be deleted.
func TestCertificates(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sim.Options{CertificateVerifyDelay: time.Minute, LoadBalancerActiveDelay: -1})
	ctx := context.Background()
	leaf, key, err := sim.SelfSignedCertificate("app.example.com")
	if err != nil {
		t.Fatal(err)
	}
	_, otherKey, _ := sim.SelfSignedCertificate("other.example.com")
	custom, resp, err := e.do.Certificates.Create(ctx, &godo.CertificateRequest{Name: "custom", Type: "custom", PrivateKey: key, LeafCertificate: leaf})
	if err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("custom: %v", err)
	}
	if custom.State != "verified" || len(custom.DNSNames) != 1 || custom.DNSNames[0] != "app.example.com" || custom.SHA1Fingerprint == "" {
		t.Errorf("custom reported as %+v", custom)
	}
	bad := []struct {
		reason string
		req    godo.CertificateRequest
		want   string
	}{
		{"key of another certificate", godo.CertificateRequest{Name: "x", PrivateKey: otherKey, LeafCertificate: leaf}, "does not match"},
		{"garbage leaf", godo.CertificateRequest{Name: "x", PrivateKey: key, LeafCertificate: "nope"}, "PEM"},
		{"duplicate name", godo.CertificateRequest{Name: "custom", PrivateKey: key, LeafCertificate: leaf}, "already exists"},
		{"managed without names", godo.CertificateRequest{Name: "y", Type: "lets_encrypt"}, "dns_names is required"},
		{"unknown type", godo.CertificateRequest{Name: "z", Type: "acme"}, "type must be"},
	}
	for _, b := range bad {
		if _, _, err := e.do.Certificates.Create(ctx, &b.req); statusOf(err) != 422 || !strings.Contains(messageOf(err), b.want) {
			t.Errorf("%s: %v, want 422 with %q", b.reason, err, b.want)
		}
	}
	good, _, err := e.do.Certificates.Create(ctx, &godo.CertificateRequest{Name: "le", Type: "lets_encrypt", DNSNames: []string{"www.example.com"}})
	if err != nil || good.State != "pending" {
		t.Fatalf("lets_encrypt: %v %v", good, err)
	}
	failing, _, err := e.do.Certificates.Create(ctx, &godo.CertificateRequest{Name: "le-bad", Type: "lets_encrypt", DNSNames: []string{"www" + sim.FailingDomainSuffix}})
	if err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(time.Minute)
	for id, want := range map[string]string{good.ID: "verified", failing.ID: "error"} {
		if c, _, err := e.do.Certificates.Get(ctx, id); err != nil || c.State != want {
			t.Errorf("certificate %s: %v %v, want %s", id, c, err, want)
		}
	}
	byName, _, err := e.do.Certificates.ListByName(ctx, "le", &godo.ListOptions{PerPage: 10})
	if err != nil || len(byName) != 1 || byName[0].ID != good.ID {
		t.Errorf("ListByName: %v %v", byName, err)
	}
	req := regionalRequest("tls")
	req.ForwardingRules = []godo.ForwardingRule{{EntryProtocol: "https", EntryPort: 443, TargetProtocol: "http", TargetPort: 80, CertificateID: custom.ID}}
	if _, _, err := e.do.LoadBalancers.Create(ctx, req); err != nil {
		t.Fatalf("load balancer with the custom certificate: %v", err)
	}
	if _, err := e.do.Certificates.Delete(ctx, custom.ID); statusOf(err) != http.StatusConflict {
		t.Errorf("delete in use: %v, want 409", err)
	}
	if _, err := e.do.Certificates.Delete(ctx, good.ID); err != nil {
		t.Errorf("delete unused: %v", err)
	}
	if _, _, err := e.do.Certificates.Get(ctx, good.ID); statusOf(err) != 404 {
		t.Errorf("get after delete: %v", err)
	}
}
