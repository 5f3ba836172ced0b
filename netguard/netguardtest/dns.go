// Package netguardtest serves names for tests of the outbound policy: a DNS server on loopback
// whose answers change between queries, as a rebinding attacker's would.
package netguardtest

import (
	"context"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"

	"golang.org/x/net/dns/dnsmessage"
)

// DNS answers A queries for its names from a list per name: the n-th query gets the n-th
// address (the last one repeats). Other names and types get an empty answer.
type DNS struct {
	conn    net.PacketConn
	mu      sync.Mutex
	answers map[string][]netip.Addr
	asked   map[string]int
}

// NewDNS serves answers (name -> addresses in order of queries) until the test ends.
func NewDNS(t testing.TB, answers map[string][]netip.Addr) *DNS {
	t.Helper()
	conn, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	d := &DNS{conn: conn, answers: map[string][]netip.Addr{}, asked: map[string]int{}}
	for name, addrs := range answers {
		d.answers[strings.ToLower(strings.TrimSuffix(name, "."))+"."] = addrs
	}
	go d.serve()
	t.Cleanup(func() { _ = conn.Close() })
	return d
}

// Resolver is a resolver asking only this server.
func (d *DNS) Resolver() *net.Resolver {
	addr := d.conn.LocalAddr().String()
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var dl net.Dialer
		return dl.DialContext(ctx, "udp", addr)
	}}
}

// Asked is how many A queries name had.
func (d *DNS) Asked(name string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.asked[strings.ToLower(strings.TrimSuffix(name, "."))+"."]
}

func (d *DNS) serve() {
	buf := make([]byte, 1500)
	for {
		n, from, err := d.conn.ReadFrom(buf)
		if err != nil {
			return
		}
		var p dnsmessage.Parser
		h, err := p.Start(buf[:n])
		if err != nil {
			continue
		}
		q, err := p.Question()
		if err != nil {
			continue
		}
		out := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true})
		_ = out.StartQuestions()
		_ = out.Question(q)
		_ = out.StartAnswers()
		name := strings.ToLower(q.Name.String())
		if q.Type == dnsmessage.TypeA {
			d.mu.Lock()
			addrs := d.answers[name]
			i := d.asked[name]
			d.asked[name]++
			d.mu.Unlock()
			if len(addrs) > 0 {
				a := addrs[min(i, len(addrs)-1)]
				_ = out.AResource(dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 0},
					dnsmessage.AResource{A: a.As4()})
			}
		}
		msg, err := out.Finish()
		if err != nil {
			continue
		}
		_, _ = d.conn.WriteTo(msg, from)
	}
}
