package storetest

import (
	"io"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
)

// WireTurns is a TCP proxy in front of the database that counts round trips on the wire: a turn
// is the client speaking after the server has answered (or for the first time) on a
// connection, so a pipelined batch is one, a statement and the ping before it are two, and the
// connections of every pool in the process are counted, including those a library opens itself
// (the OpenFGA engine's PostgreSQL datastore), which a pgx tracer in the store never sees.
type WireTurns struct {
	ln       net.Listener
	upstream string
	n        atomic.Int64
	// Debug, when set before traffic starts, sees the first chunk of every turn.
	Debug func(conn string, first []byte)
	wg    sync.WaitGroup
	mu    sync.Mutex
	conns []net.Conn
}

// NewWireTurns starts a counting proxy to the host:port of databaseURL and returns it with the
// same URL pointed at the proxy. The proxy stops when the test ends.
func NewWireTurns(t testing.TB, databaseURL string) (*WireTurns, string) {
	t.Helper()
	u, err := url.Parse(databaseURL)
	if err != nil {
		t.Fatalf("storetest: database URL: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	w := &WireTurns{ln: ln, upstream: u.Host}
	w.wg.Add(1)
	go w.accept()
	t.Cleanup(w.close)
	u.Host = ln.Addr().String()
	return w, u.String()
}

// Count returns the turns so far, over every connection.
func (w *WireTurns) Count() int64 { return w.n.Load() }

func (w *WireTurns) close() {
	_ = w.ln.Close()
	w.mu.Lock()
	for _, c := range w.conns {
		_ = c.Close()
	}
	w.mu.Unlock()
	w.wg.Wait()
}

func (w *WireTurns) accept() {
	defer w.wg.Done()
	for {
		client, err := w.ln.Accept()
		if err != nil {
			return
		}
		server, err := net.Dial("tcp", w.upstream)
		if err != nil {
			_ = client.Close()
			continue
		}
		w.mu.Lock()
		w.conns = append(w.conns, client, server)
		w.mu.Unlock()
		// answered: the server has spoken since the client last did.
		answered := &atomic.Bool{}
		answered.Store(true)
		w.wg.Add(2)
		go w.pump(client, server, func(b []byte) {
			if answered.Swap(false) {
				w.n.Add(1)
				if w.Debug != nil {
					w.Debug(client.RemoteAddr().String(), b)
				}
			}
		})
		go w.pump(server, client, func([]byte) { answered.Store(true) })
	}
}

// pump copies src to dst, calling saw before forwarding each chunk it reads.
func (w *WireTurns) pump(src, dst net.Conn, saw func([]byte)) {
	defer w.wg.Done()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			saw(buf[:n])
			if _, werr := dst.Write(buf[:n]); werr != nil {
				break
			}
		}
		if err != nil {
			break
		}
	}
	_ = dst.Close()
	_ = src.Close()
	_, _ = io.Copy(io.Discard, src)
}
