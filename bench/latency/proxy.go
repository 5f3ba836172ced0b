// Package latency measures what a call costs when the replica's database is far away, as in the
// card's multi-region deployment: a TCP proxy between the replica and PostgreSQL delays every
// chunk by half a round-trip time in each direction, and the benchmark reports the p50 of load
// balancer create, get and list through the whole stack at RTT 0, 2, 20 and 60 ms, with the
// ratio of each to its budget (create 3 x RTT + 10 ms, get and list RTT + 5 ms).
//
//	go test -run '^$' -bench . -benchtime 1x ./bench/latency
package latency

import (
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Proxy forwards TCP connections to an upstream address, holding every chunk for the configured
// one-way delay before passing it on, in order. It adds latency, not bandwidth limits.
type Proxy struct {
	ln       net.Listener
	upstream string
	oneWay   atomic.Int64 // nanoseconds
	wg       sync.WaitGroup
	mu       sync.Mutex
	conns    []net.Conn
}

// NewProxy listens on a free loopback port and forwards to upstream.
func NewProxy(upstream string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, upstream: upstream}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the proxy's host:port.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// SetRTT sets the round-trip time the proxy adds, for chunks read from now on.
func (p *Proxy) SetRTT(rtt time.Duration) { p.oneWay.Store(int64(rtt / 2)) }

// Close stops accepting and closes every forwarded connection.
func (p *Proxy) Close() {
	_ = p.ln.Close()
	p.mu.Lock()
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		down, err := p.ln.Accept()
		if err != nil {
			return
		}
		up, err := net.Dial("tcp", p.upstream)
		if err != nil {
			_ = down.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, down, up)
		p.mu.Unlock()
		go p.pump(down, up)
		go p.pump(up, down)
	}
}

// chunk is bytes read at one moment, due at the other side one delay later.
type chunk struct {
	data []byte
	due  time.Time
}

// pump copies src to dst, delaying each chunk by the one-way delay in force when it was read.
func (p *Proxy) pump(src, dst net.Conn) {
	queue := make(chan chunk, 4096)
	go func() {
		defer close(queue)
		for {
			buf := make([]byte, 32<<10)
			n, err := src.Read(buf)
			if n > 0 {
				queue <- chunk{data: buf[:n], due: time.Now().Add(time.Duration(p.oneWay.Load()))}
			}
			if err != nil {
				return
			}
		}
	}()
	for c := range queue {
		if d := time.Until(c.due); d > 0 {
			time.Sleep(d)
		}
		if _, err := dst.Write(c.data); err != nil {
			break
		}
	}
	// Drain so the reader never blocks on a full queue, then close both sides.
	go func() {
		for range queue {
		}
	}()
	_ = dst.Close()
	_ = src.Close()
	_, _ = io.Copy(io.Discard, src)
}
