package storetest

import (
	"io"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Proxy is a TCP proxy in front of the database for tests and benchmarks. It does two things,
// on every connection of every pool in the process, including those a library opens itself
// (the OpenFGA engine's PostgreSQL datastore), which a pgx tracer in the store never sees:
//
//   - it counts round trips on the wire (Count): a turn is the client speaking after the server
//     has answered (or for the first time) on a connection, so a pipelined batch is one, and a
//     statement and the ping before it are two;
//   - it adds a round-trip time (SetRTT), holding every chunk for half of it in each direction,
//     in order, as a database a region away would. It adds latency, not bandwidth limits.
type Proxy struct {
	ln       net.Listener
	upstream string
	turns    atomic.Int64
	oneWay   atomic.Int64 // nanoseconds
	// Debug, when set before traffic starts, sees the first chunk of every turn.
	Debug func(conn string, first []byte)
	wg    sync.WaitGroup
	mu    sync.Mutex
	conns []net.Conn
}

// NewWireTurns starts a proxy to the host:port of databaseURL and returns it with the same URL
// pointed at the proxy. The proxy stops when the test ends.
func NewWireTurns(t testing.TB, databaseURL string) (*Proxy, string) {
	t.Helper()
	u, err := url.Parse(databaseURL)
	if err != nil {
		t.Fatalf("storetest: database URL: %v", err)
	}
	p, err := StartProxy(u.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	u.Host = p.Addr()
	return p, u.String()
}

// StartProxy listens on a free loopback port and forwards to upstream (host:port) until Close.
func StartProxy(upstream string) (*Proxy, error) {
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

// Count returns the turns so far, over every connection.
func (p *Proxy) Count() int64 { return p.turns.Load() }

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
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		server, err := net.Dial("tcp", p.upstream)
		if err != nil {
			_ = client.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, client, server)
		p.mu.Unlock()
		// answered: the server has spoken since the client last did.
		answered := &atomic.Bool{}
		answered.Store(true)
		p.wg.Add(2)
		go p.pump(client, server, func(b []byte) {
			if answered.Swap(false) {
				p.turns.Add(1)
				if p.Debug != nil {
					p.Debug(client.RemoteAddr().String(), b)
				}
			}
		})
		go p.pump(server, client, func([]byte) { answered.Store(true) })
	}
}

// chunk is bytes read at one moment, due at the other side one delay later.
type chunk struct {
	data []byte
	due  time.Time
}

// pump copies src to dst, calling saw as each chunk is read and forwarding it after the one-way
// delay in force when it was read.
func (p *Proxy) pump(src, dst net.Conn, saw func([]byte)) {
	defer p.wg.Done()
	queue := make(chan chunk, 4096)
	go func() {
		defer close(queue)
		for {
			buf := make([]byte, 32<<10)
			n, err := src.Read(buf)
			if n > 0 {
				saw(buf[:n])
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
