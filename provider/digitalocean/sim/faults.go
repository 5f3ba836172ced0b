package sim

import (
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"time"
)

// FaultKind names one way a request can go wrong.
type FaultKind string

const (
	// Fault5xx answers 500 before the request changes anything.
	Fault5xx FaultKind = "5xx"
	// Fault429 answers 429 with the rate headers and retry-after, before any change.
	Fault429 FaultKind = "429"
	// FaultSlow waits SlowDelay (or until the client gives up), then serves the request.
	FaultSlow FaultKind = "slow"
	// FaultReset closes the connection without an answer, before any change.
	FaultReset FaultKind = "reset"
	// FaultTimeoutAfterCommit makes the change, waits SlowDelay, then answers 504: the client
	// believes the request failed although it took effect (how duplicate creates happen).
	FaultTimeoutAfterCommit FaultKind = "timeout_after_commit"
	// FaultResetAfterCommit makes the change, then closes the connection without an answer.
	FaultResetAfterCommit FaultKind = "reset_after_commit"
)

// afterCommit reports whether the kind lets the request take effect first.
func (k FaultKind) afterCommit() bool {
	return k == FaultTimeoutAfterCommit || k == FaultResetAfterCommit
}

func (k FaultKind) valid() bool {
	switch k {
	case Fault5xx, Fault429, FaultSlow, FaultReset, FaultTimeoutAfterCommit, FaultResetAfterCommit:
		return true
	}
	return false
}

// Faults says which API requests fail and how. The zero value injects nothing.
type Faults struct {
	// Rate is the chance (0..1) that a matching request gets a fault.
	Rate float64
	// Kinds are drawn uniformly for each faulted request; empty means Fault5xx.
	Kinds []FaultKind
	// SlowDelay is the wait of FaultSlow and FaultTimeoutAfterCommit.
	SlowDelay time.Duration
	// RetryAfter is what a Fault429 announces; zero means one second.
	RetryAfter time.Duration
	// Seed makes the draws repeatable; the same seed and request order give the same faults.
	Seed uint64
	// Methods limits faults to these HTTP methods (e.g. "POST"); empty means all.
	Methods []string
	// Paths limits faults to requests whose path starts with one of these (e.g.
	// "/v2/load_balancers"); empty means all API paths.
	Paths []string
	// Max stops injecting after this many faults; zero means no limit.
	Max int
}

// faultState is the active configuration and its random source.
type faultState struct {
	cfg      Faults
	rng      *rand.Rand
	injected int
}

func (f *faultState) set(cfg Faults) {
	f.cfg = cfg
	f.rng = rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15))
	f.injected = 0
}

// draw decides the fault for one request, or "" for none. Callers hold the server lock.
func (f *faultState) draw(r *http.Request) FaultKind {
	c := f.cfg
	if c.Rate <= 0 || f.rng == nil || (c.Max > 0 && f.injected >= c.Max) {
		return ""
	}
	if len(c.Methods) > 0 && !slices.ContainsFunc(c.Methods, func(m string) bool { return strings.EqualFold(m, r.Method) }) {
		return ""
	}
	if len(c.Paths) > 0 && !slices.ContainsFunc(c.Paths, func(p string) bool { return strings.HasPrefix(r.URL.Path, p) }) {
		return ""
	}
	if f.rng.Float64() >= c.Rate {
		return ""
	}
	f.injected++
	if len(c.Kinds) == 0 {
		return Fault5xx
	}
	return c.Kinds[f.rng.IntN(len(c.Kinds))]
}

// SetFaults replaces the fault configuration; Faults{} turns faults off.
func (s *Server) SetFaults(f Faults) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f.Kinds = slices.Clone(f.Kinds)
	s.faults.set(f)
}

// ClearFaults turns faults off.
func (s *Server) ClearFaults() { s.SetFaults(Faults{}) }

// FaultsInjected reports how many faults were injected since the last SetFaults.
func (s *Server) FaultsInjected() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.faults.injected
}

// sleepCtx waits d or until the request is abandoned.
func sleepCtx(r *http.Request, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-r.Context().Done():
	}
}

// dropConnection closes the client's connection without an answer. If the writer cannot be
// hijacked (HTTP/2, a recorder) it panics with http.ErrAbortHandler, which net/http turns into
// a reset stream: the client sees a broken exchange either way.
func dropConnection(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	_ = conn.Close()
}

// discardWriter swallows the real answer of a request whose reply a fault replaces.
type discardWriter struct{ h http.Header }

func (d *discardWriter) Header() http.Header         { return d.h }
func (d *discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (d *discardWriter) WriteHeader(int)             {}
