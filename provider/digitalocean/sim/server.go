// Package sim is a DigitalOcean API simulator served over HTTP, for tests and the dev server.
//
// godo talks to it as to api.digitalocean.com: it serves absolute /v2/... paths at the root of
// its base URL, answers with DigitalOcean's JSON shapes and error bodies, carries the rate
// headers on every answer and enforces the per-token rolling budgets. Each bearer token is its
// own account. State is in memory behind one mutex; asynchronous transitions (a load balancer
// going active, its ip arriving, a droplet booting, a certificate being verified) are computed
// lazily from the clock, so nothing runs in the background and a test clock controls them.
//
// Faults can be injected from Go (SetFaults) or over HTTP (POST /_sim/faults), and tests can
// inspect an account (Snapshot, request counters) or seed it (CreateDroplet).
//
// Routes are Go ServeMux patterns registered through Server.route, one routeX method per
// resource family called from New; a new family (Kubernetes clusters, say) adds its own file
// and one call there, and its requests are authenticated, rate limited, counted and faulted
// like the others without further wiring.
package sim

import (
	"context"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Server is the simulator; it is an http.Handler and can also listen by itself (Start).
type Server struct {
	opts Options

	mu            sync.Mutex
	accounts      map[string]*account // by bearer token
	rates         map[string]*rateWindow
	requests      map[string]int // by "METHOD /path/{pattern}"
	bodies        map[string][][]byte
	faults        faultState
	nextDropletID int
	nextAddr      uint32

	api   *http.ServeMux
	admin *http.ServeMux

	srvMu   sync.Mutex
	httpSrv *http.Server
	baseURL string
}

// New builds a simulator with opts (zero fields take the defaults).
func New(opts Options) *Server {
	s := &Server{
		opts:          opts.withDefaults(),
		accounts:      map[string]*account{},
		rates:         map[string]*rateWindow{},
		requests:      map[string]int{},
		bodies:        map[string][][]byte{},
		nextDropletID: 400000000,
		api:           http.NewServeMux(),
		admin:         http.NewServeMux(),
	}
	now := s.opts.Now()
	for _, t := range opts.Tokens {
		if t != "" {
			s.accounts[t] = newAccount(now)
		}
	}
	s.routeLoadBalancers()
	s.routeDroplets()
	s.routeVPCs()
	s.routeCertificates()
	s.routeKubernetes()
	s.routeAdmin()
	return s
}

// Start listens on 127.0.0.1 at a free port and returns the base URL (no trailing slash) to
// give godo or provider.Account.Endpoint.
func (s *Server) Start() (string, error) {
	s.srvMu.Lock()
	defer s.srvMu.Unlock()
	if s.httpSrv != nil {
		return s.baseURL, nil
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	s.httpSrv = &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          log.New(io.Discard, "", 0), // dropped connections are intended
	}
	s.baseURL = "http://" + ln.Addr().String()
	go func() { _ = s.httpSrv.Serve(ln) }()
	return s.baseURL, nil
}

// URL returns the base URL after Start, or "".
func (s *Server) URL() string {
	s.srvMu.Lock()
	defer s.srvMu.Unlock()
	return s.baseURL
}

// Close stops the listener started by Start and drops open connections.
func (s *Server) Close() error {
	s.srvMu.Lock()
	defer s.srvMu.Unlock()
	if s.httpSrv == nil {
		return nil
	}
	err := s.httpSrv.Close()
	s.httpSrv = nil
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// reqInfo travels in the request context from ServeHTTP to the API handlers.
type reqInfo struct {
	acct      *account
	requestID string
}

type reqInfoKey struct{}

// ServeHTTP authenticates, counts, rate-limits and maybe faults a request, then routes it.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, "/_sim/") {
		s.admin.ServeHTTP(w, r)
		return
	}
	requestID := newUUID()
	w.Header().Set("x-request-id", requestID)
	token := bearerToken(r)
	_, pattern := s.api.Handler(r)
	kind := r.Method + " (unmatched)"
	if pattern != "" {
		kind = pattern
	}

	s.mu.Lock()
	now := s.opts.Now()
	acct := s.lookupLocked(token, now)
	win := s.rates[token]
	if win == nil {
		win = &rateWindow{}
		s.rates[token] = win
	}
	ans := win.admit(now, s.opts.RequestsPerMinute, s.opts.RequestsPerHour)
	s.requests[kind]++
	if acct != nil {
		acct.requests[kind]++
	}
	var fault FaultKind
	if acct != nil && ans.allowed && pattern != "" {
		fault = s.faults.draw(r)
	}
	faultCfg := s.faults.cfg
	s.mu.Unlock()

	setRateHeaders(w.Header(), ans)
	switch {
	case acct == nil:
		writeError(w, requestID, errUnauthorized())
		return
	case !ans.allowed:
		setRetryAfter(w.Header(), ans.retryAfter)
		writeError(w, requestID, errTooManyRequests())
		return
	case pattern == "":
		writeError(w, requestID, errNotFound())
		return
	}

	switch fault {
	case Fault5xx:
		writeError(w, requestID, errServer(http.StatusInternalServerError))
		return
	case Fault429:
		wait := faultCfg.RetryAfter
		if wait <= 0 {
			wait = time.Second
		}
		setRateHeaders(w.Header(), rateAnswer{limit: ans.limit, remaining: 0, reset: now.Add(wait)})
		setRetryAfter(w.Header(), wait)
		writeError(w, requestID, errTooManyRequests())
		return
	case FaultReset:
		dropConnection(w)
		return
	case FaultSlow:
		sleepCtx(r, faultCfg.SlowDelay)
	}

	r = r.WithContext(context.WithValue(r.Context(), reqInfoKey{}, &reqInfo{acct: acct, requestID: requestID}))
	if fault.afterCommit() {
		s.api.ServeHTTP(&discardWriter{h: http.Header{}}, r)
		if fault == FaultResetAfterCommit {
			dropConnection(w)
			return
		}
		sleepCtx(r, faultCfg.SlowDelay)
		writeError(w, requestID, errServer(http.StatusGatewayTimeout))
		return
	}
	s.api.ServeHTTP(w, r)
}

// lookupLocked returns the token's account, making one when any token is accepted.
func (s *Server) lookupLocked(token string, now time.Time) *account {
	if token == "" {
		return nil
	}
	a := s.accounts[token]
	if a == nil && s.opts.AcceptAnyToken {
		a = newAccount(now)
		s.accounts[token] = a
	}
	return a
}

// bearerToken reads "Authorization: Bearer <token>".
func bearerToken(r *http.Request) string {
	h := r.Header.Get("Authorization")
	const prefix = "bearer "
	if len(h) < len(prefix) || !strings.EqualFold(h[:len(prefix)], prefix) {
		return ""
	}
	return strings.TrimSpace(h[len(prefix):])
}
