package sim

import (
	"encoding/binary"
	"net/netip"
)

// Public addresses come from the benchmarking range 198.18.0.0/15 and 2001:db8::/32, which
// never route on the internet, so nothing a test prints can be mistaken for a real host.
var (
	v4Base = netip.MustParseAddr("198.18.0.0")
	v6Base = netip.MustParseAddr("2001:db8::")
)

// allocAddrsLocked hands out the next public IPv4 and IPv6 pair.
func (s *Server) allocAddrsLocked() (string, string) {
	s.nextAddr++
	n := s.nextAddr
	b4 := v4Base.As4()
	binary.BigEndian.PutUint32(b4[:], binary.BigEndian.Uint32(b4[:])+n)
	b6 := v6Base.As16()
	binary.BigEndian.PutUint32(b6[12:], n)
	return netip.AddrFrom4(b4).String(), netip.AddrFrom16(b6).String()
}

// privateAddr returns the n-th host address of a VPC range (n from 2: .1 is the gateway).
func privateAddr(ipRange string, n int) string {
	p, err := netip.ParsePrefix(ipRange)
	if err != nil || !p.Addr().Is4() {
		return ""
	}
	b := p.Masked().Addr().As4()
	binary.BigEndian.PutUint32(b[:], binary.BigEndian.Uint32(b[:])+uint32(n))
	a := netip.AddrFrom4(b)
	if !p.Contains(a) {
		return ""
	}
	return a.String()
}
