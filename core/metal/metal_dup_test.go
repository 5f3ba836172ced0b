package metal_test

import (
	"net"
	"net/netip"
	"testing"

	"better-compute.dev/compute/gen/go/bettercompute/compute/v1/errcode"
	"better-compute.dev/compute/netguard"
)

// TestMetalDuplicateBMCByNormalisedHost: duplicate detection compares the host's normalised
// form, the protocol and the effective port, on real PostgreSQL: spellings of one host (case,
// trailing dot, brackets, the loopback names, the default port written out) are the enrolled
// BMC again, while a Redfish (TCP) and an IPMI (UDP) endpoint on one port, another port, or
// another tenant's node are not.
func TestMetalDuplicateBMCByNormalisedHost(t *testing.T) {
	t.Parallel()
	e := newMetalEnv(t)
	// Dev mode and tests allow loopback explicitly; production refuses it (TestMetalEnroll).
	e.svc.Base.Outbound = netguard.Policy{Allow: netguard.AllowLoopback()}
	type bmc struct {
		address, protocol string
		port              int32
	}
	enroll := func(tenant string, name string, b bmc) error {
		ctx := e.editorA
		if tenant == e.tenantB {
			ctx = e.editorB
		}
		r := metalEnrollRequest(tenant, name, b.address)
		r.Bmc.Protocol, r.Bmc.Port = b.protocol, b.port
		if b.protocol == "ipmi" {
			r.Bmc.InsecureTls = false
		}
		_, err := e.svc.Metal.EnrollNode(ctx, r)
		return err
	}
	for _, first := range []bmc{
		{"127.0.0.1", "redfish", 8443},
		{"bmc-7.example.net", "redfish", 0}, // does not resolve: compared by its name
		{"192.0.2.20", "ipmi", 0},
	} {
		if err := enroll(e.tenantA, "first-"+first.address, first); err != nil {
			t.Fatalf("enroll %+v: %v", first, err)
		}
	}
	for i, tc := range []struct {
		reason    string
		tenant    string // "" tenant A
		bmc       bmc
		duplicate bool
	}{
		{"the same spelling", "", bmc{"127.0.0.1", "redfish", 8443}, true},
		{"localhost", "", bmc{"localhost", "redfish", 8443}, true},
		{"LOCALHOST", "", bmc{"LOCALHOST", "redfish", 8443}, true},
		{"localhost with a trailing dot", "", bmc{"localhost.", "redfish", 8443}, true},
		{"the IPv6 loopback in brackets", "", bmc{"[::1]", "redfish", 8443}, true},
		{"the IPv6 loopback spelled out", "", bmc{"0:0:0:0:0:0:0:1", "redfish", 8443}, true},
		{"the IPv4-mapped loopback", "", bmc{"::ffff:127.0.0.1", "redfish", 8443}, true},
		{"a name in upper case with a trailing dot", "", bmc{"BMC-7.Example.NET.", "redfish", 0}, true},
		{"a name with the default port written out", "", bmc{"bmc-7.example.net", "redfish", 443}, true},
		{"an IPMI endpoint with the default port written out", "", bmc{"192.0.2.20", "ipmi", 623}, true},
		{"IPMI (UDP) on the Redfish endpoint's port", "", bmc{"localhost", "ipmi", 8443}, false},
		{"Redfish (TCP) on the IPMI endpoint's port", "", bmc{"192.0.2.20", "redfish", 623}, false},
		{"another port of the same host", "", bmc{"localhost", "redfish", 8444}, false},
		{"another host", "", bmc{"127.0.0.2", "redfish", 8443}, false},
		{"another tenant's node on the same BMC", "b", bmc{"127.0.0.1", "redfish", 8443}, false},
	} {
		tenant := e.tenantA
		if tc.tenant == "b" {
			tenant = e.tenantB
		}
		err := enroll(tenant, "n"+string(rune('a'+i)), tc.bmc)
		switch {
		case tc.duplicate:
			metalWantErr(t, tc.reason, err, errcode.InvalidInput, "bmc.address")
		case err != nil:
			t.Errorf("%s: %v, want enrolled", tc.reason, err)
		}
	}
	// Several systems behind one BMC (a blade chassis): the system is part of the endpoint.
	withSystem := func(name, protocol, system string) error {
		r := metalEnrollRequest(e.tenantA, name, "127.0.0.1")
		r.Bmc.Protocol, r.Bmc.Port, r.Bmc.SystemId = protocol, 8443, system
		_, err := e.svc.Metal.EnrollNode(e.editorA, r)
		return err
	}
	if err := withSystem("blade-2", "redfish", "2"); err != nil {
		t.Errorf("another system behind an enrolled BMC: %v, want enrolled", err)
	}
	metalWantErr(t, "the same system twice", withSystem("blade-2-again", "redfish", "2"), errcode.InvalidInput, "bmc.address")
	metalWantErr(t, "an IPMI BMC naming a system", withSystem("ipmi-blade", "ipmi", "2"), errcode.InvalidInput, "bmc.systemId")
}

// TestMetalEnrollRefusesOwnAddresses: an address of the replica itself (not loopback) is
// refused at enrollment under the production policy.
func TestMetalEnrollRefusesOwnAddresses(t *testing.T) {
	t.Parallel()
	e := newMetalEnv(t)
	ifAddrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	var own string
	for _, ia := range ifAddrs {
		if p, err := netip.ParsePrefix(ia.String()); err == nil && !p.Addr().IsLoopback() && !p.Addr().IsLinkLocalUnicast() {
			own = p.Addr().String()
			break
		}
	}
	if own == "" {
		t.Skip("this machine has no address but loopback and link-local")
	}
	_, err = e.svc.Metal.EnrollNode(e.editorA, metalEnrollRequest(e.tenantA, "self", own))
	metalWantErr(t, "an address of this replica", err, errcode.InvalidInput, "bmc.address")
}
