package digitalocean

import (
	"context"
	"testing"

	"better-compute.dev/compute/provider"
	"better-compute.dev/compute/provider/digitalocean/sim"
)

// TestNetworks: create, get, find by name (paging through the default VPCs with a small page
// size), the delete rules, and idempotent delete.
func TestNetworks(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sim.Options{}, Options{PageSize: 4}, true)
	nets := e.p.Networks()
	n, err := nets.Create(bg(), provider.NetworkSpec{Name: "bc-net-a", Region: "ams3", IPRange: "10.250.0.0/24"})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	want := provider.Network{ID: n.ID, Name: "bc-net-a", Region: "ams3", IPRange: "10.250.0.0/24"}
	if *n != want {
		t.Errorf("created %+v, want %+v", *n, want)
	}
	got, err := nets.Get(bg(), n.ID)
	if err != nil || *got != want {
		t.Errorf("get: %+v %v", got, err)
	}
	found, err := nets.FindByName(bg(), "bc-net-a")
	if err != nil || found.ID != n.ID {
		t.Errorf("find by name: %+v %v", found, err)
	}
	if pages := e.srv.Requests()["GET /v2/vpcs"]; pages < 2 {
		t.Errorf("find by name read %d pages, want it to walk past the first", pages)
	}
	_, err = nets.Create(bg(), provider.NetworkSpec{Name: "bc-net-b", Region: "ams3", IPRange: "10.250.0.0/16"})
	wantKind(t, "overlapping range", err, provider.ErrInvalid)
	_, err = nets.FindByName(bg(), "nope")
	wantKind(t, "unknown name", err, provider.ErrNotFound)

	def, _ := e.srv.DefaultVPC(e.account.Token, "ams3")
	wantKind(t, "delete the default VPC", nets.Delete(bg(), def), provider.ErrInvalid)
	m := e.droplet(t, "member", "ams3", n.ID)
	wantKind(t, "delete with members", nets.Delete(bg(), n.ID), provider.ErrBusy)
	if err := e.p.Machines().Delete(bg(), m); err != nil {
		t.Fatal(err)
	}
	if err := nets.Delete(bg(), n.ID); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if err := nets.Delete(bg(), n.ID); err != nil {
		t.Errorf("second delete: %v", err)
	}
	_, err = nets.Get(bg(), n.ID)
	wantKind(t, "get after delete", err, provider.ErrNotFound)
}

// TestCertificates: custom (verified at once), managed (pending, then verified on the real
// clock), a managed one that fails, find by name, and idempotent delete.
func TestCertificates(t *testing.T) {
	t.Parallel()
	e := newEnv(t, fastSim(), Options{}, false)
	certs := e.p.Certificates()
	leaf, key, err := sim.SelfSignedCertificate("api.example.com")
	if err != nil {
		t.Fatal(err)
	}
	custom, err := certs.Create(bg(), provider.CertificateSpec{Name: "bc-cert-custom", PrivateKeyPEM: key, LeafCertPEM: leaf})
	if err != nil || custom.State != provider.CertificateVerified {
		t.Fatalf("custom: %+v %v", custom, err)
	}
	managed, err := certs.Create(bg(), provider.CertificateSpec{Name: "bc-cert-managed", Managed: true, DNSNames: []string{"www.example.com"}})
	if err != nil || managed.State != provider.CertificatePending {
		t.Fatalf("managed: %+v %v", managed, err)
	}
	failing, err := certs.Create(bg(), provider.CertificateSpec{Name: "bc-cert-bad", Managed: true, DNSNames: []string{"www" + sim.FailingDomainSuffix}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		reason string
		id     string
		want   provider.CertificateState
	}{
		{"managed is issued", managed.ID, provider.CertificateVerified},
		{"failing name ends in error", failing.ID, provider.CertificateError},
	} {
		poll(t, c.reason, func() (bool, error) {
			got, err := certs.Get(bg(), c.id)
			return err == nil && got.State == c.want, err
		})
	}
	found, err := certs.FindByName(bg(), "bc-cert-managed")
	if err != nil || found.ID != managed.ID {
		t.Errorf("find by name: %+v %v", found, err)
	}
	_, err = certs.Create(bg(), provider.CertificateSpec{Name: "bc-cert-custom", PrivateKeyPEM: key, LeafCertPEM: leaf})
	wantKind(t, "duplicate name", err, provider.ErrInvalid)
	if err := certs.Delete(bg(), managed.ID); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if err := certs.Delete(bg(), managed.ID); err != nil {
		t.Errorf("second delete: %v", err)
	}
	_, err = certs.Get(bg(), managed.ID)
	wantKind(t, "get after delete", err, provider.ErrNotFound)
	_, err = certs.FindByName(bg(), "bc-cert-managed")
	wantKind(t, "find after delete", err, provider.ErrNotFound)
}

// TestMachines: create (new, then active on the real clock, in the default VPC), get, find by
// name, idempotent delete, and malformed ids.
func TestMachines(t *testing.T) {
	t.Parallel()
	e := newEnv(t, fastSim(), Options{}, false)
	ms := e.p.Machines()
	m, err := ms.Create(bg(), provider.MachineSpec{Name: "bc-node-1", Region: "tor1", Size: "s-2vcpu-4gb", Image: "ubuntu-24-04-x64"})
	if err != nil || m.Status != provider.MachineNew {
		t.Fatalf("create: %+v %v", m, err)
	}
	def, _ := e.srv.DefaultVPC(e.account.Token, "tor1")
	if m.NetworkID != def || m.Region != "tor1" {
		t.Errorf("placed in %s/%s, want tor1's default VPC", m.Region, m.NetworkID)
	}
	poll(t, "machine active", func() (bool, error) {
		got, err := ms.Get(bg(), m.ID)
		return err == nil && got.Status == provider.MachineActive, err
	})
	found, err := ms.FindByName(bg(), "bc-node-1")
	if err != nil || found.ID != m.ID {
		t.Errorf("find by name: %+v %v", found, err)
	}
	_, err = ms.Create(bg(), provider.MachineSpec{Name: "bad name", Region: "tor1", Size: "s", Image: "x"})
	wantKind(t, "invalid name", err, provider.ErrInvalid)
	_, err = ms.Get(bg(), "droplet-7")
	wantKind(t, "malformed id", err, provider.ErrInvalid)
	if err := ms.Delete(bg(), m.ID); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if err := ms.Delete(bg(), m.ID); err != nil {
		t.Errorf("second delete: %v", err)
	}
	_, err = ms.Get(bg(), m.ID)
	wantKind(t, "get after delete", err, provider.ErrNotFound)
	_, err = ms.FindByName(bg(), "bc-node-1")
	wantKind(t, "find after delete", err, provider.ErrNotFound)
}

// TestNewAndFactory: the factory opens working providers; a foreign kind or a missing token is
// refused.
func TestNewAndFactory(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sim.Options{}, Options{}, true)
	p, err := NewFactory(Options{Limiters: NewLimiters()})(context.Background(), e.account)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Networks().FindByName(bg(), "default-nyc3"); err != nil {
		t.Errorf("factory provider: %v", err)
	}
	cases := []struct {
		reason  string
		account provider.Account
	}{
		{"another kind", provider.Account{Kind: "aws", Token: "t"}},
		{"no token", provider.Account{Kind: Kind, Token: "  "}},
		{"bad endpoint", provider.Account{Kind: Kind, Token: "t", Endpoint: "http://[::1"}},
	}
	for _, c := range cases {
		_, err := New(c.account, Options{})
		wantKind(t, c.reason, err, provider.ErrInvalid)
	}
}
