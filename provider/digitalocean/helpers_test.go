package digitalocean

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strconv"
	"testing"
	"time"

	"better-compute.dev/compute/provider"
	"better-compute.dev/compute/provider/digitalocean/sim"
	"better-compute.dev/compute/testwait"
)

// testEnv is a simulator over real HTTP and a provider for one of its accounts.
type testEnv struct {
	srv     *sim.Server
	clock   *sim.ManualClock // nil when the simulator runs on the real clock
	account provider.Account
	p       provider.Provider
}

// newEnv starts a simulator; manual selects a hand-moved clock (for deterministic async
// transitions) over the real one. The token is random so a test can look for it in errors.
func newEnv(t *testing.T, simOpts sim.Options, opts Options, manual bool) *testEnv {
	t.Helper()
	var clock *sim.ManualClock
	if manual {
		clock = sim.NewManualClock(time.Now())
		simOpts.Now = clock.Now
	}
	var raw [12]byte
	_, _ = rand.Read(raw[:])
	token := "dop_v1_" + hex.EncodeToString(raw[:])
	simOpts.Tokens = append(simOpts.Tokens, token)
	srv := sim.New(simOpts)
	url, err := srv.Start()
	if err != nil {
		t.Fatalf("start simulator: %v", err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	if opts.Limiters == nil {
		opts.Limiters = NewLimiters()
	}
	if opts.RequestsPerMinute == 0 {
		// The client-side bucket is tested on its own; here it must not slow the suite.
		opts.RequestsPerMinute, opts.Burst = 60000, 1000
	}
	if opts.RequestTimeout == 0 {
		opts.RequestTimeout = 5 * time.Second
	}
	account := provider.Account{ID: "pacct_test", Kind: Kind, Token: token, Endpoint: url}
	p, err := New(account, opts)
	if err != nil {
		t.Fatalf("new provider: %v", err)
	}
	return &testEnv{srv: srv, clock: clock, account: account, p: p}
}

// fastSim are simulator delays short enough to poll through on the real clock.
func fastSim() sim.Options {
	return sim.Options{
		LoadBalancerActiveDelay: 20 * time.Millisecond, LoadBalancerIPDelay: 40 * time.Millisecond,
		LoadBalancerUpdateDelay: 20 * time.Millisecond, DropletActiveDelay: 20 * time.Millisecond,
		CertificateVerifyDelay: 20 * time.Millisecond,
	}
}

// droplet seeds an active droplet and returns its machine id.
func (e *testEnv) droplet(t *testing.T, name, region, vpc string) string {
	t.Helper()
	d, err := e.srv.CreateDroplet(e.account.Token, sim.DropletSeed{Name: name, Region: region, VPCUUID: vpc})
	if err != nil {
		t.Fatalf("seed droplet: %v", err)
	}
	return strconv.Itoa(d.ID)
}

// poll calls check until it reports done, failing after a generous bound; it asserts on the
// outcome, never on how long it took.
func poll(t *testing.T, what string, check func() (bool, error)) {
	t.Helper()
	testwait.Until(t, 2500*time.Millisecond, what, func() (bool, string) {
		done, err := check()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return done, "never happened"
	})
}

// wantKind asserts err matches the sentinel (or is a RateLimitedError when want is nil).
func wantKind(t *testing.T, reason string, err, want error) {
	t.Helper()
	if want == nil {
		var rl *provider.RateLimitedError
		if !errors.As(err, &rl) {
			t.Errorf("%s: %v, want a RateLimitedError", reason, err)
		}
		return
	}
	if !errors.Is(err, want) {
		t.Errorf("%s: %v, want %v", reason, err, want)
	}
}

func bg() context.Context { return context.Background() }
