package bmc

import (
	"context"
	"testing"
	"time"

	"better-compute.dev/compute/netguard"
	"better-compute.dev/compute/provider/bmc/redfishsim"
	"better-compute.dev/compute/seal"
)

const testPassword = "sim-password-1"

// newSim starts a simulator with the given initial power and returns a target for it. The
// target trusts the simulator's certificate, so TLS is verified as in production.
func newSim(t *testing.T, power string, password string) (*redfishsim.Server, Target) {
	t.Helper()
	sim := redfishsim.New(redfishsim.Config{Username: "operator", Password: password, PowerState: power})
	t.Cleanup(sim.Close)
	return sim, Target{
		Address: sim.Host(), Port: sim.Port(), Protocol: Redfish,
		Username: "operator", Password: seal.Secret(password), CACertPEM: sim.CertPEM(),
	}
}

// newSimWith starts a simulator from cfg (Username and Password set) and returns a target for it.
func newSimWith(t *testing.T, cfg redfishsim.Config) (*redfishsim.Server, Target) {
	t.Helper()
	sim := redfishsim.New(cfg)
	t.Cleanup(sim.Close)
	return sim, Target{
		Address: sim.Host(), Port: sim.Port(), Protocol: Redfish,
		Username: cfg.Username, Password: seal.Secret(cfg.Password), CACertPEM: sim.CertPEM(),
	}
}

func testCtx(t *testing.T) context.Context {
	t.Helper()
	// A bound so a broken simulator cannot hang the suite; nothing asserts on time.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func stepNames(r Report) []Step {
	out := make([]Step, len(r.Steps))
	for i, s := range r.Steps {
		out[i] = s.Step
	}
	return out
}

// testOutbound lets the runner reach the simulators of these tests, which listen on loopback;
// production refuses loopback (see TestOutboundPolicyRefusesBeforeSending).
var testOutbound = netguard.Policy{Allow: netguard.AllowLoopback()}
