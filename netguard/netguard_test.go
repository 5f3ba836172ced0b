package netguard

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"better-compute.dev/compute/netguard/netguardtest"
)

func TestCheckAddr(t *testing.T) {
	t.Parallel()
	production := Policy{}
	dev := Policy{Allow: AllowLoopback()}
	platform, err := ParseAllow("169.254.10.0/24, 10.1.2.3")
	if err != nil {
		t.Fatal(err)
	}
	withLinkLocalBMCs := Policy{Allow: platform}
	cases := []struct {
		reason string
		policy Policy
		addr   string
		ok     bool
	}{
		{"public address", production, "203.0.113.9", true},
		{"private address (BMC networks are private)", production, "10.20.30.40", true},
		{"loopback", production, "127.0.0.1", false},
		{"loopback, other /8 address", production, "127.8.9.10", false},
		{"IPv6 loopback", production, "::1", false},
		{"IPv4-mapped loopback", production, "::ffff:127.0.0.1", false},
		{"metadata service", production, "169.254.169.254", false},
		{"IPv6 metadata service", production, "fd00:ec2::254", false},
		{"IPv6 link-local", production, "fe80::1", false},
		{"unspecified", production, "0.0.0.0", false},
		{"IPv6 unspecified", production, "::", false},
		{"this network", production, "0.1.2.3", false},
		{"multicast", production, "224.0.0.1", false},
		{"loopback allowed in dev", dev, "127.0.0.1", true},
		{"metadata still refused in dev", dev, "169.254.169.254", false},
		{"platform allow list", withLinkLocalBMCs, "169.254.10.7", true},
		{"outside the platform allow list", withLinkLocalBMCs, "169.254.169.254", false},
	}
	for _, c := range cases {
		err := c.policy.CheckAddr(netip.MustParseAddr(c.addr))
		if (err == nil) != c.ok {
			t.Errorf("%s: CheckAddr(%s) = %v, want ok=%v", c.reason, c.addr, err, c.ok)
		}
		if err != nil && !errors.Is(err, ErrRefused) {
			t.Errorf("%s: %v is not ErrRefused", c.reason, err)
		}
	}
}

// The replica's own addresses are refused: a tenant must not reach the control plane's ports.
func TestOwnAddressesRefused(t *testing.T) {
	t.Parallel()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Skip("no interface addresses:", err)
	}
	for _, a := range addrs {
		pfx, err := netip.ParsePrefix(a.String())
		if err != nil {
			continue
		}
		if err := (Policy{}).CheckAddr(pfx.Addr()); err == nil {
			t.Errorf("own address %s allowed", pfx.Addr())
		}
	}
}

func TestResolveChecksEveryAddress(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	if _, err := (Policy{}).Resolve(ctx, "localhost"); !errors.Is(err, ErrRefused) {
		t.Errorf("localhost: %v, want refused", err)
	}
	if _, err := (Policy{}).Resolve(ctx, "LOCALHOST."); !errors.Is(err, ErrRefused) {
		t.Errorf("LOCALHOST.: %v, want refused", err)
	}
	if _, err := (Policy{}).Resolve(ctx, "no-such-host.invalid"); !errors.Is(err, ErrUnresolved) {
		t.Errorf("unresolvable: %v, want ErrUnresolved", err)
	}
	got, err := (Policy{Allow: AllowLoopback()}).Resolve(ctx, "localhost")
	if err != nil || len(got) == 0 {
		t.Fatalf("localhost with loopback allowed: %v %v", got, err)
	}
	for _, spelling := range []string{"localhost", "LOCALHOST", "127.0.0.1"} {
		addrs, _ := (Policy{Allow: AllowLoopback()}).Resolve(ctx, spelling)
		if k := HostKey(addrs, spelling); k != "127.0.0.1" {
			t.Errorf("HostKey(%s) = %q, want 127.0.0.1", spelling, k)
		}
	}
}

// The dialer checks the address it actually connects to, after resolution.
func TestDialerRefusesAtConnect(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if c, err := (Policy{}).Dialer(0).Dial("tcp", ln.Addr().String()); err == nil || !errors.Is(err, ErrRefused) {
		if c != nil {
			c.Close()
		}
		t.Errorf("dial loopback under production policy: %v, want refused", err)
	}
	c, err := (Policy{Allow: AllowLoopback()}).Dialer(0).Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatalf("dial loopback with loopback allowed: %v", err)
	}
	c.Close()
}

func TestParseAllowRefusesGarbage(t *testing.T) {
	t.Parallel()
	if _, err := ParseAllow("10.0.0.0/8,not-an-address"); err == nil {
		t.Error("garbage accepted")
	}
}

// A name checked by Resolve that resolves to a refused address a moment later (DNS rebinding)
// is refused at connect time, after resolution: nothing reaches the refused address.
func TestRebindingRefusedAtConnect(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var accepted atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			c.Close()
		}
	}()
	dns := netguardtest.NewDNS(t, map[string][]netip.Addr{
		"rebind.test": {netip.MustParseAddr("192.0.2.10"), netip.MustParseAddr("127.0.0.1")},
	})
	p := Policy{Resolver: dns.Resolver()}
	ctx := context.Background()
	addrs, err := p.Resolve(ctx, "rebind.test")
	if err != nil || len(addrs) != 1 || addrs[0] != netip.MustParseAddr("192.0.2.10") {
		t.Fatalf("first resolution: %v %v, want the allowed 192.0.2.10", addrs, err)
	}
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	c, err := p.Dialer(time.Second).DialContext(ctx, "tcp", net.JoinHostPort("rebind.test", port))
	if c != nil {
		c.Close()
	}
	if !errors.Is(err, ErrRefused) {
		t.Fatalf("dial after rebinding to loopback: %v, want refused", err)
	}
	if dns.Asked("rebind.test") < 2 {
		t.Errorf("the dialer did not resolve again (%d queries)", dns.Asked("rebind.test"))
	}
	if n := accepted.Load(); n != 0 {
		t.Errorf("%d connections reached the rebound loopback address", n)
	}
}
