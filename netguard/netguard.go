// Package netguard decides whether the control plane may open a connection a tenant asked for:
// a BMC address, or anything else a tenant names. Such a connection is a request the control
// plane makes on the tenant's behalf from inside the platform's network, so without a guard a
// tenant could point it at the replica itself, at its database, or at a cloud metadata service
// (169.254.169.254) and read what answers there.
//
// The guard resolves the name and checks every address it resolves to; dialers made by Dialer
// check the address actually connected to as well, so a name that resolves differently a moment
// later (DNS rebinding) still cannot reach a refused address.
package netguard

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync"
	"syscall"
	"time"
)

// ErrRefused reports an address the policy does not allow.
var ErrRefused = errors.New("netguard: address not allowed")

// ErrUnresolved reports a name that resolves to no address.
var ErrUnresolved = errors.New("netguard: name does not resolve")

// Policy says which addresses tenant-named connections may reach. The zero value is the
// production default: everything but the refused ranges below.
type Policy struct {
	// Allow lists prefixes allowed even though a refused range holds them (a platform whose
	// BMCs sit on link-local addresses, say). Dev mode and tests allow loopback here.
	Allow []netip.Prefix
	// Resolver looks names up; nil is net.DefaultResolver.
	Resolver *net.Resolver
}

// refusedPrefixes are never reached unless allowed: "this network", loopback, link-local
// (which holds the metadata services), the IPv6 metadata address some clouds use, multicast,
// and the IPv4-mapped forms of them.
var refusedPrefixes = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("127.0.0.0/8"),
	netip.MustParsePrefix("169.254.0.0/16"),
	netip.MustParsePrefix("224.0.0.0/4"),
	netip.MustParsePrefix("255.255.255.255/32"),
	netip.MustParsePrefix("::/128"),
	netip.MustParsePrefix("::1/128"),
	netip.MustParsePrefix("fe80::/10"),
	netip.MustParsePrefix("ff00::/8"),
	netip.MustParsePrefix("fd00:ec2::254/128"),
}

// AllowLoopback returns the prefixes of the loopback ranges, for dev mode and tests whose
// simulators listen on 127.0.0.1.
func AllowLoopback() []netip.Prefix {
	return []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}
}

// ParseAllow reads a comma-separated list of CIDR prefixes or addresses (a platform setting).
func ParseAllow(list string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, f := range strings.Split(list, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if p, err := netip.ParsePrefix(f); err == nil {
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(f)
		if err != nil {
			return nil, fmt.Errorf("netguard: %q is neither an address nor a CIDR prefix", f)
		}
		out = append(out, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
	}
	return out, nil
}

// CheckAddr reports whether the policy allows connecting to a.
func (p Policy) CheckAddr(a netip.Addr) error {
	a = a.Unmap().WithZone("")
	for _, allowed := range p.Allow {
		if allowed.Contains(a) {
			return nil
		}
	}
	for _, refused := range refusedPrefixes {
		if refused.Contains(a) {
			return fmt.Errorf("%w: %s is %s", ErrRefused, a, describe(a))
		}
	}
	if own, _ := ownAddrs(); own[a] {
		return fmt.Errorf("%w: %s is an address of this replica", ErrRefused, a)
	}
	return nil
}

// describe names the refused range an address is in, for the caller's message.
func describe(a netip.Addr) string {
	switch {
	case a.IsLoopback():
		return "a loopback address"
	case a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast():
		return "a link-local address (metadata services live there)"
	case a.IsUnspecified() || netip.MustParsePrefix("0.0.0.0/8").Contains(a):
		return "an unspecified address"
	case a.IsMulticast():
		return "a multicast address"
	}
	return "a refused address"
}

// Resolve looks host up (an IP literal is used as is) and checks every address it resolves to:
// one refused address refuses the name, since the dialer could pick any of them. It returns the
// addresses in the resolver's order.
func (p Policy) Resolve(ctx context.Context, host string) ([]netip.Addr, error) {
	host = strings.TrimSuffix(strings.Trim(host, "[]"), ".")
	if a, err := netip.ParseAddr(host); err == nil {
		if err := p.CheckAddr(a); err != nil {
			return nil, err
		}
		return []netip.Addr{a.Unmap()}, nil
	}
	r := p.Resolver
	if r == nil {
		r = net.DefaultResolver
	}
	addrs, err := r.LookupNetIP(ctx, "ip", host)
	if err != nil || len(addrs) == 0 {
		return nil, fmt.Errorf("%w: %s", ErrUnresolved, host)
	}
	for i, a := range addrs {
		if err := p.CheckAddr(a); err != nil {
			return nil, fmt.Errorf("%s resolves to a refused address: %w", host, err)
		}
		addrs[i] = a.Unmap()
	}
	return addrs, nil
}

// Dialer returns a dialer whose every connection is checked at connect time, after resolution
// (through the policy's resolver): the address actually dialed must be allowed, whatever the
// name resolved to when Resolve checked it.
func (p Policy) Dialer(timeout time.Duration) *net.Dialer {
	return &net.Dialer{Timeout: timeout, Resolver: p.Resolver, Control: func(_, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return fmt.Errorf("%w: cannot read the dialed address %q", ErrRefused, address)
		}
		return p.CheckAddr(ap.Addr())
	}}
}

// ownAddrs caches the replica's own interface addresses for a short while: interfaces change
// rarely, and CheckAddr runs on every connection.
var own struct {
	sync.Mutex
	addrs map[netip.Addr]bool
	at    time.Time
}

const ownAddrsTTL = 30 * time.Second

func ownAddrs() (map[netip.Addr]bool, error) {
	own.Lock()
	defer own.Unlock()
	if own.addrs != nil && time.Since(own.at) < ownAddrsTTL {
		return own.addrs, nil
	}
	ifAddrs, err := net.InterfaceAddrs()
	if err != nil {
		return own.addrs, err
	}
	m := map[netip.Addr]bool{}
	for _, ia := range ifAddrs {
		if pfx, err := netip.ParsePrefix(ia.String()); err == nil {
			m[pfx.Addr().Unmap()] = true
		}
	}
	own.addrs, own.at = m, time.Now()
	return m, nil
}

// HostKey is the form of host that duplicate detection compares: the least of its resolved
// addresses (IPv4 sorts first), so "localhost", "LOCALHOST", "127.0.0.1" and "[::1]" are one
// host; the lower-cased name without brackets or trailing dot when nothing resolved. The IPv6
// loopback is the IPv4 one: "localhost" names both, and so does a service listening on both.
func HostKey(addrs []netip.Addr, host string) string {
	if len(addrs) == 0 {
		name := strings.ToLower(strings.TrimSuffix(strings.Trim(host, "[]"), "."))
		if a, err := netip.ParseAddr(name); err == nil {
			addrs = []netip.Addr{a}
		} else {
			return name
		}
	}
	least := addrs[0].Unmap().WithZone("")
	for _, a := range addrs[1:] {
		if a = a.Unmap().WithZone(""); a.Less(least) {
			least = a
		}
	}
	if least == netip.IPv6Loopback() {
		return "127.0.0.1"
	}
	return least.String()
}
