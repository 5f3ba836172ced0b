package digitalocean

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"better-compute.dev/compute/provider"
	"better-compute.dev/compute/provider/digitalocean/sim"
	"better-compute.dev/compute/redact"
)

// TestFaultsAreTransient: server errors, dropped connections and timeouts all come back as
// ErrTransient, which the reconciler retries.
func TestFaultsAreTransient(t *testing.T) {
	t.Parallel()
	cases := []struct {
		reason string
		kind   sim.FaultKind
	}{
		{"500", sim.Fault5xx},
		{"connection reset", sim.FaultReset},
		{"slower than the client timeout", sim.FaultSlow},
		{"504 after commit", sim.FaultTimeoutAfterCommit},
	}
	for _, c := range cases {
		t.Run(string(c.kind), func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, sim.Options{}, Options{RequestTimeout: 200 * time.Millisecond}, true)
			e.srv.SetFaults(sim.Faults{Rate: 1, Kinds: []sim.FaultKind{c.kind}, SlowDelay: 2 * time.Second, Max: 1})
			_, err := e.p.Networks().Create(bg(), provider.NetworkSpec{Name: "n", Region: "nyc3"})
			wantKind(t, c.reason, err, provider.ErrTransient)
			if !provider.Retryable(err) {
				t.Errorf("%s: not retryable: %v", c.reason, err)
			}
		})
	}
}

// TestServerRateLimitMapping: a 429 becomes a RateLimitedError whose RetryAfter is the
// retry-after the answer carried; the limiter then holds later calls back without sending.
func TestServerRateLimitMapping(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sim.Options{}, Options{MaxRateWait: -1}, true)
	e.srv.SetFaults(sim.Faults{Rate: 1, Kinds: []sim.FaultKind{sim.Fault429}, RetryAfter: 30 * time.Second, Max: 1})
	before := time.Now()
	_, err := e.p.Machines().Get(bg(), "12345")
	after := time.Now()
	var rl *provider.RateLimitedError
	if !errors.As(err, &rl) || !provider.Retryable(err) {
		t.Fatalf("got %v, want a retryable RateLimitedError", err)
	}
	if rl.RetryAfter.Before(before.Add(30*time.Second)) || rl.RetryAfter.After(after.Add(31*time.Second)) {
		t.Errorf("RetryAfter %s, want about 30s from now", rl.RetryAfter)
	}
	if !strings.Contains(err.Error(), "429 API Rate limit exceeded.") {
		t.Errorf("message lost the answer: %v", err)
	}
	sent := e.srv.Requests()["GET /v2/droplets/{id}"]
	_, err = e.p.Machines().Get(bg(), "12345")
	wantKind(t, "call during the announced wait", err, nil)
	if e.srv.Requests()["GET /v2/droplets/{id}"] != sent {
		t.Errorf("the limiter sent a request during the announced wait")
	}
}

// TestRemainingZeroHoldsBack: when the headers report the budget spent, the next call waits
// for ratelimit-reset (here: refuses at once, as MaxRateWait is negative) without sending.
func TestRemainingZeroHoldsBack(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sim.Options{RequestsPerHour: 2}, Options{MaxRateWait: -1}, true)
	for i := range 2 {
		_, err := e.p.Networks().FindByName(bg(), "missing")
		wantKind(t, "request "+strconv.Itoa(i), err, provider.ErrNotFound)
	}
	_, err := e.p.Networks().FindByName(bg(), "missing")
	var rl *provider.RateLimitedError
	if !errors.As(err, &rl) {
		t.Fatalf("third call: %v, want a RateLimitedError", err)
	}
	if got := e.srv.Requests()["GET /v2/vpcs"]; got != 2 {
		t.Errorf("%d requests reached the provider, want 2", got)
	}
	if wantReset := e.clock.Now().Add(time.Hour); rl.RetryAfter.Before(wantReset.Add(-time.Second)) || rl.RetryAfter.After(wantReset.Add(time.Second)) {
		t.Errorf("RetryAfter %s, want the reported reset %s", rl.RetryAfter, wantReset)
	}
}

// TestSimulatorBudgetTriggersAndResets: the simulator's per-minute budget refuses the request
// after it and admits again once its clock has moved past the window.
func TestSimulatorBudgetTriggersAndResets(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sim.Options{RequestsPerMinute: 3}, Options{MaxRateWait: -1}, true)
	steps := []struct {
		reason  string
		advance time.Duration
		fresh   bool  // a new client-side limiter, so only the server decides
		want    error // nil: rate limited
	}{
		{"first", 0, false, provider.ErrNotFound},
		{"second", 0, false, provider.ErrNotFound},
		{"third fills the budget", 0, false, provider.ErrNotFound},
		{"fourth is refused by the simulator", 0, false, nil},
		{"the window moved on", 61 * time.Second, true, provider.ErrNotFound},
	}
	p := e.p
	for _, s := range steps {
		e.clock.Advance(s.advance)
		if s.fresh {
			var err error
			if p, err = New(e.account, Options{Limiters: NewLimiters(), MaxRateWait: -1}); err != nil {
				t.Fatal(err)
			}
		}
		_, err := p.LoadBalancers().Get(bg(), "5b1f0a52-0000-4000-8000-000000000000")
		wantKind(t, s.reason, err, s.want)
	}
	if got := e.srv.Requests()["GET /v2/load_balancers/{id}"]; got != 5 {
		t.Errorf("%d requests reached the simulator, want 5", got)
	}
}

// TestErrorsNeverCarryTheToken collects the errors of every failure path and looks for the
// token (and a wrong token) in their text.
func TestErrorsNeverCarryTheToken(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sim.Options{}, Options{MaxRateWait: -1}, true)
	wrong := e.account
	wrong.Token = "dop_v1_wrongtokenvalue0123456789"
	intruder, err := New(wrong, Options{Limiters: NewLimiters()})
	if err != nil {
		t.Fatal(err)
	}
	var errs []error
	add := func(_ any, err error) { errs = append(errs, err) }
	add(e.p.LoadBalancers().Get(bg(), "missing"))
	add(e.p.LoadBalancers().Create(bg(), provider.LoadBalancerSpec{Name: "x", Region: "nyc3"}))
	add(e.p.LoadBalancers().Create(bg(), provider.LoadBalancerSpec{Name: "x", Region: "nyc3", MachineIDs: []string{"bad"}}))
	add(e.p.Certificates().Create(bg(), provider.CertificateSpec{Name: "c", PrivateKeyPEM: "-----BEGIN PRIVATE KEY-----", LeafCertPEM: "x"}))
	add(intruder.Machines().Get(bg(), "1"))
	for _, k := range []sim.FaultKind{sim.Fault5xx, sim.FaultReset, sim.Fault429} {
		e.srv.SetFaults(sim.Faults{Rate: 1, Kinds: []sim.FaultKind{k}, Max: 1})
		add(e.p.Networks().Get(bg(), "n"))
	}
	add(e.p.Networks().Get(bg(), "n")) // held back by the client-side limiter after the 429
	for i, err := range errs {
		if err == nil {
			t.Errorf("case %d: no error", i)
			continue
		}
		for _, secret := range []string{e.account.Token, wrong.Token} {
			if strings.Contains(err.Error(), secret) {
				t.Errorf("case %d: error carries a token: %v", i, err)
			}
		}
	}
	wantKind(t, "unknown token", errs[4], provider.ErrInvalid)
	wantKind(t, "invalid key material", errs[3], provider.ErrInvalid)
}

// TestRedactsEchoedToken: even if an answer echoed the token, the error text would not.
func TestRedactsEchoedToken(t *testing.T) {
	t.Parallel()
	c := &client{token: "dop_v1_echoed", scrub: redact.New("dop_v1_echoed")}
	err := c.wrap("digitalocean: op: server said dop_v1_echoed", provider.ErrTransient)
	if strings.Contains(err.Error(), "dop_v1_echoed") || !errors.Is(err, provider.ErrTransient) {
		t.Errorf("wrap: %v", err)
	}
}
