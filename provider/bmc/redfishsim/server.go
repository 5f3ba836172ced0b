// Package redfishsim is a Redfish BMC simulator served over HTTPS on 127.0.0.1, for tests of
// provider/bmc through bmclib's Redfish (gofish) driver.
//
// It models one ComputerSystem with its power state, boot override and ComputerSystem.Reset
// action, plus the chassis, manager and inventory (processors, memory, NICs) that bmclib's
// inventory reads. Logins go through SessionService sessions (X-Auth-Token) or HTTP basic auth.
// Every request is recorded with passwords removed, every power and boot change is recorded as
// an action string ("boot Pxe Once UEFI", "reset ForceRestart") so tests can assert the exact
// sequence a workflow sent, and faults (5xx for N requests, refused credentials) come on demand.
package redfishsim

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Config describes the simulated machine and its BMC account. Zero fields take defaults.
type Config struct {
	Username string // default "admin"
	Password string // default "password"

	Manufacturer string // default "Better Compute Labs"
	Model        string // default "BC-1000"
	SerialNumber string // default "SIM0001"
	BIOSVersion  string // default "2.4.1"
	BMCFirmware  string // default "1.12.0"

	PowerState string // initial PowerState, default "Off"

	CPUs           int   // sockets, default 2; negative: none
	CoresPerCPU    int   // default 16
	DIMMs          int   // populated DIMM slots, default 4
	DIMMSizeMiB    int   // default 32768
	Drives         int   // default 2
	DriveSizeBytes int64 // default 960 GB

	// Layout arranges the resources (ids, memory size properties, storage); default
	// LayoutClassic.
	Layout Layout
	// Delay holds every request this long before answering it (a slow BMC). The request is
	// recorded, with its arrival time, before the delay.
	Delay time.Duration

	// BasicOnly is a service without a SessionService: the service root names none (and no
	// Links.Sessions), a session login answers 404, and only HTTP Basic authenticates.
	BasicOnly bool
	// PowerDelay is how long after accepting a Reset the BMC applies it, as real BMCs do (1 to
	// 11 s): until then PowerState reports the state from before.
	PowerDelay time.Duration
	// Systems is how many ComputerSystems the BMC manages (default 1): a blade chassis or a
	// multi-node server. Each has its own power and boot override; see SystemIDs.
	Systems int
}

func (c *Config) defaults() {
	def := func(s *string, v string) {
		if *s == "" {
			*s = v
		}
	}
	def(&c.Username, "admin")
	def(&c.Password, "password")
	def(&c.Manufacturer, "Better Compute Labs")
	def(&c.Model, "BC-1000")
	def(&c.SerialNumber, "SIM0001")
	def(&c.BIOSVersion, "2.4.1")
	def(&c.BMCFirmware, "1.12.0")
	def(&c.PowerState, PowerOff)
	switch {
	case c.CPUs == 0:
		c.CPUs = 2
	case c.CPUs < 0:
		c.CPUs = 0 // a service reporting no processor
	}
	if c.CoresPerCPU == 0 {
		c.CoresPerCPU = 16
	}
	if c.DIMMs == 0 {
		c.DIMMs = 4
	}
	if c.DIMMSizeMiB == 0 {
		c.DIMMSizeMiB = 32768
	}
	if c.Drives == 0 {
		c.Drives = 2
	}
	if c.DriveSizeBytes == 0 {
		c.DriveSizeBytes = 960_000_000_000
	}
}

// Power states the simulator reports (Redfish PowerState values).
const (
	PowerOn  = "On"
	PowerOff = "Off"
)

// Request is one recorded HTTP request. Body has every password removed; credentials in
// headers are never recorded, only how the request authenticated.
type Request struct {
	Method string
	Path   string
	Body   string
	Auth   string // "none", "session", "basic", or "rejected"
	Status int    // the status the simulator answered
	// At is when the request arrived (its headers were read), before any Delay or Hold.
	At time.Time
}

// Fault makes matching requests fail. Empty Method or Path match anything; Path matches as a
// prefix. Count is how many requests fail (a negative Count never runs out).
type Fault struct {
	Method string
	Path   string
	Status int
	Count  int
	// EchoCredentials puts the credentials the request carried into the error body, as a
	// careless BMC might, so tests can prove the client scrubs what it is told.
	EchoCredentials bool
	// Hangup closes the connection without an answer (a BMC that dies mid-request); Status
	// is then ignored.
	Hangup bool
}

// Server is a running simulator. All methods are safe for concurrent use.
type Server struct {
	ts  *httptest.Server
	cfg Config
	lay layout

	mu          sync.Mutex
	machines    []*machine
	sessions    map[string]string // session id -> token
	nextSession int
	requests    []Request
	actions     []string
	boots       []string
	faults      []*Fault
	rejectAuth  bool
	presented   int
	holds       []*hold
}

type bootState struct {
	target, enabled, mode string
}

// New starts a simulator on 127.0.0.1 with a fresh self-signed certificate (TLS, like a real
// BMC). Close it when done.
func New(cfg Config) *Server {
	cfg.defaults()
	s := &Server{
		cfg:      cfg,
		lay:      newLayout(cfg.Layout),
		sessions: map[string]string{},
	}
	s.machines = newMachines(cfg, s.lay)
	s.ts = httptest.NewUnstartedServer(http.HandlerFunc(s.serve))
	// A client refusing the self-signed certificate is a tested case, not news for stderr.
	s.ts.Config.ErrorLog = log.New(io.Discard, "", 0)
	s.ts.StartTLS()
	return s
}

// Close stops the server.
func (s *Server) Close() {
	s.mu.Lock()
	for _, h := range s.holds {
		h.free()
	}
	s.mu.Unlock()
	s.ts.Close()
}

// URL is the base URL, https://127.0.0.1:<port>.
func (s *Server) URL() string { return s.ts.URL }

// Host is the address the server listens on (127.0.0.1).
func (s *Server) Host() string {
	h, _, _ := net.SplitHostPort(s.ts.Listener.Addr().String())
	return h
}

// Port is the TCP port the server listens on.
func (s *Server) Port() int {
	_, p, _ := net.SplitHostPort(s.ts.Listener.Addr().String())
	n, _ := strconv.Atoi(p)
	return n
}

// Certificate is the server's certificate (self-signed for 127.0.0.1).
func (s *Server) Certificate() *x509.Certificate { return s.ts.Certificate() }

// CertPEM is the server's certificate in PEM, as an operator would pin it for a BMC.
func (s *Server) CertPEM() []byte { return pemCert(s.ts.Certificate()) }

// TLSConfig trusts the server's certificate, for a test's own HTTP client.
func (s *Server) TLSConfig() *tls.Config {
	pool := x509.NewCertPool()
	pool.AddCert(s.ts.Certificate())
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
}

// Requests returns a copy of every request so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Actions returns the power and boot changes the BMC accepted, in order: "boot <Target>
// <Enabled>[ <Mode>]" for a Boot PATCH and "reset <ResetType>" for a Reset action.
func (s *Server) Actions() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.actions...)
}

// Boots returns the device the machine started from at each power-on or restart ("Pxe", "Hdd"),
// which is how a test sees that a one-time override was consumed.
func (s *Server) Boots() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.boots...)
}

// PowerState is the (first) machine's current PowerState, as the BMC reports it now.
func (s *Server) PowerState() string { return s.SystemPowerState("") }

// SetPowerState forces the (first) machine's reported PowerState, including values a client
// must not act on ("PoweringOn", "Unknown", "").
func (s *Server) SetPowerState(state string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.machines[0].power = state
}

// Boot returns the (first) machine's boot override: target, enabled ("Disabled", "Once",
// "Continuous") and mode.
func (s *Server) Boot() (target, enabled, mode string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.applyDue(time.Now())
	b := s.machines[0].boot
	return b.target, b.enabled, b.mode
}

// SessionCount is how many sessions are open (a client that logs out leaves none).
func (s *Server) SessionCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.sessions)
}

// PasswordPresented counts requests that carried the configured password (a session login
// body or basic auth), right or wrong user, so a test can show the credential really reached
// the BMC.
func (s *Server) PasswordPresented() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.presented
}

// InjectFault adds a fault; faults are checked in the order added.
func (s *Server) InjectFault(f Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = append(s.faults, &f)
}

// FailNext makes the next n requests, whatever they are, answer status.
func (s *Server) FailNext(n, status int) { s.InjectFault(Fault{Status: status, Count: n}) }

// RejectCredentials makes every login and basic-auth request fail with 401 while on (a
// changed BMC password).
func (s *Server) RejectCredentials(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rejectAuth = on
}

// ResetLog forgets recorded requests, actions and boots (state is kept).
func (s *Server) ResetLog() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests, s.actions, s.boots = nil, nil, nil
	for _, m := range s.machines {
		m.actions, m.boots = nil, nil
	}
}

// SystemPath is the path of the (first) simulated ComputerSystem (it depends on the layout).
func (s *Server) SystemPath() string { return s.lay.system }

// hold stops matching requests until released.
type hold struct {
	method, path string
	reached      chan struct{} // closed when the first matching request arrives
	release      chan struct{}
	once         sync.Once // closes reached
	releaseOnce  sync.Once
}

func (h *hold) free() { h.releaseOnce.Do(func() { close(h.release) }) }

// Hold makes requests of method whose path starts with pathPrefix wait, after they have been
// recorded, until release is called. reached is closed when the first such request arrives:
// a test can act (abort, say) while the BMC is busy with a known request.
func (s *Server) Hold(method, pathPrefix string) (reached <-chan struct{}, release func()) {
	h := &hold{method: method, path: pathPrefix, reached: make(chan struct{}), release: make(chan struct{})}
	s.mu.Lock()
	s.holds = append(s.holds, h)
	s.mu.Unlock()
	return h.reached, h.free
}

// matchingHolds returns the holds a request must wait for and marks them reached. Called with
// the lock held.
func (s *Server) matchingHolds(method, path string) []*hold {
	var out []*hold
	for _, h := range s.holds {
		if (h.method == "" || h.method == method) && strings.HasPrefix(path, h.path) {
			h.once.Do(func() { close(h.reached) })
			out = append(out, h)
		}
	}
	return out
}
