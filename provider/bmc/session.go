package bmc

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/cookiejar"
	"os"
	"strconv"
	"strings"
	"time"

	bmclib "github.com/bmc-toolbox/bmclib/v2"
	"github.com/go-logr/logr"
	"github.com/stmcginnis/gofish"
	gfcommon "github.com/stmcginnis/gofish/common"
)

// conn is one run's connection to a BMC, used by that run on one goroutine. Redfish goes
// through bmclib (session); IPMI through ipmitool directly (ipmiConn). Every method sends
// requests only through the run's gate.
type conn interface {
	powerState(ctx context.Context) (PowerState, error)
	// setPower sends "on", "off" (hard) or "cycle".
	setPower(ctx context.Context, action string) error
	// setBoot sets the boot device ("pxe", "disk"), once or persistently.
	setBoot(ctx context.Context, device string, persistent, efi bool) error
	inventory(ctx context.Context) (*Inventory, error)
	close(ctx context.Context)
}

// session is one bmclib client with one open connection, and the run's own gofish client on
// the same BMC (it decided the authentication, found the node's system and reads the
// inventory). It records every answer into the run's report. The clients are never logged or
// stored anywhere else: bmclib's Auth.Pass is an exported field.
type session struct {
	client  *bmclib.Client
	api     *gofish.APIClient
	system  string // the node's ComputerSystem (@odata.id)
	target  Target
	timeout time.Duration
	scrub   scrubber
	report  *Report
}

// tlsConfig is the TLS the target asks for: verified against its CA (or the system roots)
// unless InsecureTLS.
func tlsConfig(t Target) (*tls.Config, error) {
	var pool *x509.CertPool
	if !t.InsecureTLS {
		var err error
		if pool, err = t.certPool(); err != nil {
			return nil, err
		}
	}
	return &tls.Config{RootCAs: pool, InsecureSkipVerify: t.InsecureTLS, MinVersion: tls.VersionTLS12}, nil //nolint:gosec // the target asked for it
}

// openRedfish logs in to t and builds the bmclib client for its system, filtered to its driver.
// The authentication is read from the service root (a session where the service offers one,
// HTTP Basic where it does not, or where its SessionService cannot create sessions); the node's
// system is found among the BMC's (Target.SystemID), and bmclib is pointed at it by name when
// there are several, so no action reaches another machine behind the same BMC.
func openRedfish(ctx context.Context, t Target, timeouts timeouts, g *gate, scrub scrubber, report *Report) (*session, error) {
	if os.Getenv("DEBUG_BMCLIB") != "" {
		// bmclib's Redfish driver then dumps every request, login body included, to stdout.
		return nil, fmt.Errorf("DEBUG_BMCLIB is set in the environment; refusing to send credentials: %w", errNoDriver)
	}
	if (t.driver() == DriverDell || t.driver() == DriverOpenBMC) && t.port() != "443" {
		// bmclib v2.3.4 has no port option for these drivers: they always dial 443.
		return nil, fmt.Errorf("%w: bmclib's %s driver only reaches port 443, not %s", ErrInvalidTarget, t.driver(), t.port())
	}
	tlsCfg, err := tlsConfig(t)
	if err != nil {
		return nil, err
	}
	s := &session{target: t, timeout: timeouts.step, scrub: scrub, report: report}
	// The run's gofish client lives as long as the run (each of its requests is bounded on its
	// own); the login is bounded by the step.
	stepCtx, cancel := context.WithTimeout(ctx, timeouts.step)
	defer cancel()
	auth := AuthBasic
	if !t.BasicAuth {
		if auth, err = redfishAuth(stepCtx, t, guardedHTTPClient(g, timeouts, tlsCfg)); err != nil {
			s.answer("Open", "", err)
			return nil, err
		}
	}
	if s.api, auth, err = loginRedfish(ctx, t, auth, guardedHTTPClient(g, timeouts, tlsCfg)); err != nil {
		s.answer("Open", "", err)
		return nil, err
	}
	report.Auth = auth
	systems, err := s.api.Service.Systems()
	if err != nil {
		s.api.Logout()
		s.answer("Open", "", err)
		return nil, err
	}
	sys, err := pickSystem(systems, t.SystemID)
	if err != nil {
		s.api.Logout()
		s.answer("Open", "", err)
		return nil, err
	}
	s.system = sys.ODataID

	opts := []bmclib.Option{
		// bmclib's own logging is off: its messages carry driver errors we have not scrubbed.
		bmclib.WithLogger(logr.Discard()),
		bmclib.WithPerProviderTimeout(timeouts.step),
		// Every HTTP connection is checked at connect time against the outbound policy and
		// the run's gate, and every request is bounded on its own, not only the step.
		bmclib.WithHTTPClient(guardedHTTPClient(g, timeouts, nil)),
		bmclib.WithRedfishPort(t.port()), bmclib.WithRedfishUseBasicAuth(auth == AuthBasic),
	}
	if len(systems) > 1 {
		// bmclib acts on every system unless told one by name (pickSystem made sure it is unique).
		opts = append(opts, bmclib.WithRedfishSystemName(sys.Name))
	}
	if !t.InsecureTLS {
		opts = append(opts, bmclib.WithSecureTLS(tlsCfg.RootCAs))
	}
	s.client = bmclib.NewClient(t.host(), t.Username, t.Password.Reveal(), opts...)
	// Filter before Open: unfiltered, Open logs in through every registered vendor driver.
	s.client.Registry.Drivers = s.client.Registry.Using(string(t.Protocol))
	s.client.Registry.Drivers = s.client.Registry.For(t.driver())
	if len(s.client.Registry.Drivers) == 0 {
		s.api.Logout()
		return nil, fmt.Errorf("no bmclib driver %q for protocol %q: %w", t.driver(), t.Protocol, errNoDriver)
	}
	if err := s.client.Open(stepCtx); err != nil {
		s.api.Logout()
		s.answer("Open", "", err)
		return nil, err
	}
	s.answer("Open", "session opened ("+auth+")", nil)
	return s, nil
}

var errNoDriver = errors.New("driver not supported")

// close logs out; a failure to log out is not the run's failure (the BMC expires sessions).
func (s *session) close(ctx context.Context) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.timeout)
	defer cancel()
	_ = s.client.Close(ctx)
	s.api.Logout()
}

func (s *session) powerState(ctx context.Context) (PowerState, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	raw, err := s.client.GetPowerState(ctx)
	s.answer("GetPowerState", raw, err)
	if err != nil {
		return PowerUnknown, err
	}
	s.report.RawPower = s.scrub.clean(raw)
	return NormalizePower(raw), nil
}

func (s *session) setPower(ctx context.Context, action string) error {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	ok, err := s.client.SetPowerState(ctx, action)
	if err == nil && !ok {
		err = fmt.Errorf("power %s not acknowledged", action)
	}
	s.answer("SetPowerState "+action, "ok", err)
	return err
}

func (s *session) setBoot(ctx context.Context, device string, persistent, efi bool) error {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	ok, err := s.client.SetBootDevice(ctx, device, persistent, efi)
	if err == nil && !ok {
		err = fmt.Errorf("boot device %s not acknowledged", device)
	}
	s.answer("SetBootDevice "+device, "ok", err)
	return err
}

func (s *session) inventory(ctx context.Context) (*Inventory, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	inv, err := redfishInventory(ctx, s.api, s.system)
	summary := ""
	if inv != nil {
		summary = fmt.Sprintf("%s %s %s, %d CPUs, %d DIMMs", inv.Vendor, inv.Model, inv.Serial, inv.CPUs, inv.DIMMs)
	}
	s.answer("Inventory", summary, err)
	return inv, err
}

// answer records the BMC's answer to one call, scrubbed, and which driver gave it.
func (s *session) answer(call, answer string, err error) {
	if s.client != nil {
		if p := s.client.GetMetadata().SuccessfulProvider; p != "" {
			s.report.Provider = p
		}
	}
	if err != nil {
		answer = foreignSafe(err)
	}
	s.report.LastAnswer = s.scrub.clean(call + ": " + answer)
}

// timeouts bound a run's BMC I/O: step bounds one call of a workflow (a login, a power
// change: possibly several requests), request bounds each request on its own (connect, TLS
// handshake, the answer's headers; for IPMI one ipmitool command).
type timeouts struct{ step, request time.Duration }

// guardedHTTPClient is bmclib's default HTTP client (unverified TLS unless WithSecureTLS turns
// verification on, no keep-alives: BMCs allow few connections) with a dialer that refuses what
// the outbound policy and the run's gate refuse, and per-request bounds on connecting, the TLS
// handshake and the answer's headers, so a BMC that accepts TCP and never answers holds a slot
// for one request timeout, not a step's. Without keep-alives every request dials, so the gate
// sees every request.
func guardedHTTPClient(g *gate, t timeouts, tlsCfg *tls.Config) *http.Client {
	jar, _ := cookiejar.New(nil)
	if tlsCfg == nil {
		tlsCfg = &tls.Config{InsecureSkipVerify: true} //nolint:gosec // WithSecureTLS turns verification on unless the target says InsecureTLS
	}
	return &http.Client{
		// Each request, its body included, is bounded on its own. bmclib replaces this with what
		// is left of its call's context for the requests it sends; idleBounded below bounds
		// those by the request timeout without progress.
		Timeout: t.request,
		Jar:     jar,
		Transport: &http.Transport{
			TLSClientConfig:       tlsCfg,
			DisableKeepAlives:     true,
			DialContext:           idleBounded(g.dialContext(g.outbound.Dialer(t.request).DialContext), t.request),
			TLSHandshakeTimeout:   t.request,
			ResponseHeaderTimeout: t.request,
		},
	}
}

// idleBounded makes every read and write on a dialed connection fail once it has waited a
// request timeout without progress. bmclib sets the HTTP client's overall timeout to what is left
// of the call's context (a step), so without this a BMC that sends its headers and then stalls
// the body would hold the slot for a step.
func idleBounded(dial func(ctx context.Context, network, addr string) (net.Conn, error), d time.Duration) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &idleConn{Conn: c, idle: d}, nil
	}
}

// idleConn is a connection whose every read and write has a deadline idle from now.
type idleConn struct {
	net.Conn
	idle time.Duration
}

func (c *idleConn) Read(b []byte) (int, error) {
	if err := c.Conn.SetReadDeadline(time.Now().Add(c.idle)); err != nil {
		return 0, err
	}
	return c.Conn.Read(b)
}

func (c *idleConn) Write(b []byte) (int, error) {
	if err := c.Conn.SetWriteDeadline(time.Now().Add(c.idle)); err != nil {
		return 0, err
	}
	return c.Conn.Write(b)
}

// foreignSafe is err's text with the body of every refused request replaced: the Redfish
// client quotes a refused request's answer in its error ("401: <the body>"), which becomes the
// node's lastError and last answer, shown to the tenant. A BMC address is named by the tenant,
// so what answers there may be any service (an internal admin page, a metadata service): only
// the code and messages of a Redfish error object are kept, each cut short; any other body is
// described by its size.
func foreignSafe(err error) string {
	msg := err.Error()
	for _, ge := range gofishErrors(err, nil, 0) {
		msg = strings.ReplaceAll(msg, ge.Error(), strconv.Itoa(ge.HTTPReturnedStatusCode)+": "+redfishErrorSummary(ge))
	}
	return msg
}

// gofishErrors collects the gofish HTTP errors in err's tree (bmclib joins the drivers' errors
// in a multierror and wraps them with messages).
func gofishErrors(err error, out []*gfcommon.Error, depth int) []*gfcommon.Error {
	if err == nil || depth > 32 {
		return out
	}
	if ge, ok := err.(*gfcommon.Error); ok && ge.HTTPReturnedStatusCode != 0 {
		out = append(out, ge)
	}
	switch u := err.(type) {
	case interface{ WrappedErrors() []error }:
		for _, e := range u.WrappedErrors() {
			out = gofishErrors(e, out, depth+1)
		}
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			out = gofishErrors(e, out, depth+1)
		}
	case interface{ Unwrap() error }:
		out = gofishErrors(u.Unwrap(), out, depth+1)
	case interface{ Cause() error }:
		out = gofishErrors(u.Cause(), out, depth+1)
	}
	return out
}

// redfishErrorSummary is the code and messages of a Redfish error object (DSP0266's "error"
// with "@Message.ExtendedInfo"), or a description of a body that is not one.
func redfishErrorSummary(ge *gfcommon.Error) string {
	if ge.Code == "" {
		// gofish could not read a Redfish error: its Message is the raw body.
		return fmt.Sprintf("(an answer that is not a Redfish error, %d bytes)", len(ge.Message))
	}
	parts := []string{short(ge.Code)}
	if ge.Message != "" {
		parts = append(parts, short(ge.Message))
	}
	for i, e := range ge.ExtendedInfos {
		if i == 3 {
			break
		}
		parts = append(parts, strings.TrimSpace(short(e.MessageID)+" "+short(e.Message)))
	}
	return strings.Join(parts, "; ")
}

// short cuts a message field to 200 bytes of printable text.
func short(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
	if len(s) > 200 {
		s = strings.ToValidUTF8(s[:200], "") + "..."
	}
	return s
}
