package bmc

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"os"
	"time"

	bmclib "github.com/bmc-toolbox/bmclib/v2"
	"github.com/bmc-toolbox/common"
	"github.com/go-logr/logr"

	"better-compute.dev/compute/netguard"
)

// session is one bmclib client with one open connection, used by one Run on one goroutine
// (bmclib's Client is not safe to share). It records every answer into the run's report. The
// client is never logged or stored anywhere else: its Auth.Pass is an exported field.
type session struct {
	client  *bmclib.Client
	timeout time.Duration
	scrub   scrubber
	report  *Report
}

// open builds the client for t, filtered to t's protocol and driver, and logs in.
func open(ctx context.Context, t Target, timeout time.Duration, outbound netguard.Policy, scrub scrubber, report *Report) (*session, error) {
	if os.Getenv("DEBUG_BMCLIB") != "" {
		// bmclib's Redfish driver then dumps every request, login body included, to stdout.
		return nil, fmt.Errorf("DEBUG_BMCLIB is set in the environment; refusing to send credentials: %w", errNoDriver)
	}
	opts := []bmclib.Option{
		// bmclib's own logging is off: its messages carry driver errors we have not scrubbed.
		bmclib.WithLogger(logr.Discard()),
		bmclib.WithPerProviderTimeout(timeout),
		// Every HTTP connection (Redfish) is checked at connect time against the outbound
		// policy, and every request is bounded on its own, not only the step.
		bmclib.WithHTTPClient(guardedHTTPClient(outbound, timeout)),
	}
	switch t.Protocol {
	case Redfish:
		opts = append(opts, bmclib.WithRedfishPort(t.port()), bmclib.WithRedfishUseBasicAuth(t.BasicAuth))
	case IPMI:
		opts = append(opts, bmclib.WithIpmitoolPort(t.port()))
	}
	if !t.InsecureTLS {
		pool, err := t.certPool()
		if err != nil {
			return nil, err
		}
		opts = append(opts, bmclib.WithSecureTLS(pool))
	}
	if (t.driver() == DriverDell || t.driver() == DriverOpenBMC) && t.port() != "443" {
		// bmclib v2.3.4 has no port option for these drivers: they always dial 443.
		return nil, fmt.Errorf("%w: bmclib's %s driver only reaches port 443, not %s", ErrInvalidTarget, t.driver(), t.port())
	}
	c := bmclib.NewClient(t.host(), t.Username, t.Password.Reveal(), opts...)
	// Filter before Open: unfiltered, Open logs in through every registered vendor driver.
	c.Registry.Drivers = c.Registry.Using(string(t.Protocol))
	c.Registry.Drivers = c.Registry.For(t.driver())
	if len(c.Registry.Drivers) == 0 {
		// ipmitool registers only when the binary is on PATH.
		return nil, fmt.Errorf("no bmclib driver %q for protocol %q (for ipmi, is ipmitool installed?): %w",
			t.driver(), t.Protocol, errNoDriver)
	}
	s := &session{client: c, timeout: timeout, scrub: scrub, report: report}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := c.Open(ctx); err != nil {
		s.answer("Open", "", err)
		return nil, err
	}
	s.answer("Open", "session opened", nil)
	return s, nil
}

var errNoDriver = errors.New("driver not supported")

// close logs out; a failure to log out is not the run's failure (the BMC expires sessions).
func (s *session) close(ctx context.Context) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.timeout)
	defer cancel()
	_ = s.client.Close(ctx)
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

// setPower sends a bmclib power action: "on", "off" (hard), "cycle".
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

// setBoot sets the boot device ("pxe", "disk"), once or persistently.
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

func (s *session) inventory(ctx context.Context) (*common.Device, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	d, err := s.client.Inventory(ctx)
	summary := ""
	if d != nil {
		summary = fmt.Sprintf("%s %s %s, %d CPUs, %d DIMMs", d.Vendor, d.Model, d.Serial, len(d.CPUs), len(d.Memory))
	}
	s.answer("Inventory", summary, err)
	return d, err
}

// answer records the BMC's answer to one call, scrubbed, and which driver gave it.
func (s *session) answer(call, answer string, err error) {
	if p := s.client.GetMetadata().SuccessfulProvider; p != "" {
		s.report.Provider = p
	}
	if err != nil {
		answer = err.Error()
	}
	s.report.LastAnswer = s.scrub.clean(call + ": " + answer)
}

// guardedHTTPClient is bmclib's default HTTP client (unverified TLS unless WithSecureTLS turns
// verification on, no keep-alives: BMCs allow few connections) with a dialer that refuses what
// the outbound policy refuses, and per-request bounds on the TLS handshake and the answer's
// headers, so a BMC that accepts TCP and never answers holds a slot for one timeout, not more.
func guardedHTTPClient(outbound netguard.Policy, timeout time.Duration) *http.Client {
	jar, _ := cookiejar.New(nil)
	return &http.Client{
		Timeout: timeout,
		Jar:     jar,
		Transport: &http.Transport{
			TLSClientConfig:       &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // WithSecureTLS turns verification on unless the target says InsecureTLS
			DisableKeepAlives:     true,
			DialContext:           outbound.Dialer(timeout).DialContext,
			TLSHandshakeTimeout:   timeout,
			ResponseHeaderTimeout: timeout,
		},
	}
}
