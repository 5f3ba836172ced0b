package bmc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"better-compute.dev/compute/metal"
	"better-compute.dev/compute/provider/bmc/ipmisim"
	"better-compute.dev/compute/provider/bmc/redfishsim"
	"better-compute.dev/compute/seal"
)

// The tests of this file drive BMCs that behave as the ones the project did not write: a Redfish
// service with HTTP Basic only, one that applies power changes late, one in front of two
// systems, one that dies during login, and ipmi_sim without FRU data or with an abort landing
// while ipmitool runs.

// settleRunner waits for power changes with short bounds (the simulator's delays are small).
func settleRunner(settle time.Duration) *Runner {
	return &Runner{Outbound: testOutbound, PowerSettle: settle, PowerPoll: 10 * time.Millisecond}
}

// TestBasicOnlyRedfish: a service whose root names no SessionService is driven with HTTP Basic on
// every request (verified TLS, as configured); one whose SessionService refuses to create
// sessions (405) falls back to Basic after that one refusal; wrong credentials are one refused
// request, never a second way of logging in.
func TestBasicOnlyRedfish(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		cfg   redfishsim.Config
		setup func(*redfishsim.Server)
		// sessionPosts is how many session logins reached the BMC.
		sessionPosts int
	}{
		{"no SessionService", redfishsim.Config{BasicOnly: true}, nil, 0},
		{"a SessionService that cannot create sessions", redfishsim.Config{}, func(s *redfishsim.Server) {
			s.InjectFault(redfishsim.Fault{Method: "POST", Path: "/redfish/v1/SessionService/Sessions", Status: 405, Count: -1})
		}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := tc.cfg
			cfg.Username, cfg.Password = "operator", testPassword
			sim, target := newSimWith(t, cfg)
			if tc.setup != nil {
				tc.setup(sim)
			}
			rep, err := settleRunner(10*time.Second).Run(testCtx(t), target, metal.WorkflowInspect)
			if err != nil {
				t.Fatalf("inspect: %v (report %+v)", err, rep)
			}
			if rep.Auth != AuthBasic || rep.Inventory == nil || rep.Inventory.CPUs != 2 {
				t.Errorf("auth %q inventory %+v, want basic and the machine", rep.Auth, rep.Inventory)
			}
			posts := 0
			for _, r := range sim.Requests() {
				switch {
				case r.Method == "POST" && strings.HasSuffix(r.Path, "/Sessions"):
					posts++
				case r.Path != "/redfish/v1" && r.Auth != "basic":
					t.Errorf("%s %s authenticated %q, want basic", r.Method, r.Path, r.Auth)
				}
			}
			if posts != tc.sessionPosts {
				t.Errorf("%d session logins, want %d", posts, tc.sessionPosts)
			}
			if got := sim.Actions(); !slices.Contains(got, "reset ForceOff") || sim.PowerState() != redfishsim.PowerOff {
				t.Errorf("actions %v, power %s: the inspect did not end powered off", got, sim.PowerState())
			}
		})
	}
	t.Run("wrong password is one refused request", func(t *testing.T) {
		t.Parallel()
		sim, target := newSimWith(t, redfishsim.Config{BasicOnly: true, Username: "operator", Password: testPassword})
		target.Password = seal.Secret("not-the-password")
		_, err := settleRunner(time.Second).Run(testCtx(t), target, metal.WorkflowInspect)
		if !errors.Is(err, ErrAuth) || Retryable(err) {
			t.Fatalf("run: %v, want credentials refused (permanent)", err)
		}
		refused := 0
		for _, r := range sim.Requests() {
			if r.Auth == "rejected" {
				refused++
			}
		}
		if refused != 1 || len(sim.Actions()) != 0 {
			t.Errorf("%d refused requests, actions %v: want exactly one and none", refused, sim.Actions())
		}
	})
}

// TestPowerSettles: a BMC that applies power changes late reports the old state meanwhile. Every
// workflow waits for each change to show before its next step, so inspect and commission end with
// the machine really off (the power-off is sent, never skipped on a stale "off"), and a change
// that never shows fails the step with ErrNotSettled, the reading and the requested state.
func TestPowerSettles(t *testing.T) {
	t.Parallel()
	for _, w := range []metal.Workflow{metal.WorkflowInspect, metal.WorkflowCommission, metal.WorkflowDeploy, metal.WorkflowRelease} {
		t.Run(string(w), func(t *testing.T) {
			t.Parallel()
			power := redfishsim.PowerOff
			if w == metal.WorkflowRelease {
				power = redfishsim.PowerOn
			}
			sim, target := newSimWith(t, redfishsim.Config{PowerState: power, PowerDelay: 150 * time.Millisecond, Username: "operator", Password: testPassword})
			rep, err := settleRunner(30*time.Second).Run(testCtx(t), target, w)
			if err != nil {
				t.Fatalf("run: %v (report %+v)", err, rep)
			}
			// What the run last read is what the BMC has applied: nothing is left pending.
			if n := sim.PendingPower(); n != 0 {
				t.Errorf("%d power changes still pending at the end of the run", n)
			}
			want := map[metal.Workflow]string{metal.WorkflowInspect: "Off", metal.WorkflowCommission: "Off", metal.WorkflowDeploy: "On", metal.WorkflowRelease: "Off"}[w]
			if sim.PowerState() != want || string(rep.PowerLast) != strings.ToLower(want) || rep.PowerRequested != "" || rep.PowerReadAt.IsZero() {
				t.Errorf("BMC power %s, report last %q requested %q read at %v; want %s settled", sim.PowerState(), rep.PowerLast, rep.PowerRequested, rep.PowerReadAt, want)
			}
			if w == metal.WorkflowInspect || w == metal.WorkflowCommission {
				if !slices.Contains(sim.Actions(), "reset ForceOff") {
					t.Errorf("the power-off was skipped: actions %v", sim.Actions())
				}
			}
		})
	}
	t.Run("never settles", func(t *testing.T) {
		t.Parallel()
		sim, target := newSimWith(t, redfishsim.Config{PowerDelay: time.Hour, Username: "operator", Password: testPassword})
		rep, err := settleRunner(100*time.Millisecond).Run(testCtx(t), target, metal.WorkflowInspect)
		if !errors.Is(err, ErrNotSettled) || Retryable(err) || rep.FailedStep != StepPowerOn {
			t.Fatalf("run: %v (failed step %q), want power-on not settled (permanent)", err, rep.FailedStep)
		}
		if !strings.Contains(err.Error(), "still reports off, not on") {
			t.Errorf("reason %q does not say what the BMC reports and what was asked", err)
		}
		if rep.PowerLast != PowerOff || rep.PowerRequested != PowerOn {
			t.Errorf("report last %q requested %q, want off and on", rep.PowerLast, rep.PowerRequested)
		}
		// Nothing after the unsettled power-on: no boot override, no cycle.
		if diff := cmp.Diff([]string{"reset On"}, sim.Actions()); diff != "" {
			t.Errorf("actions (-want +got):\n%s", diff)
		}
	})
}

// TestTwoSystemsBehindOneBMC: every action and the inventory address the node's system only; a
// node naming no system, or one the BMC does not have, fails before any change, listing the ids;
// SystemIDs lists them for enrollment.
func TestTwoSystemsBehindOneBMC(t *testing.T) {
	t.Parallel()
	sim, target := newSimWith(t, redfishsim.Config{Systems: 2, Username: "operator", Password: testPassword})
	r := settleRunner(10 * time.Second)
	ids, err := r.SystemIDs(testCtx(t), target)
	if err != nil || !slices.Equal(ids, []string{"1", "2"}) {
		t.Fatalf("SystemIDs: %v %v, want [1 2]", ids, err)
	}
	for _, id := range []string{"", "7"} {
		tg := target
		tg.SystemID = id
		_, err := r.Run(testCtx(t), tg, metal.WorkflowInspect)
		if !errors.Is(err, ErrInvalidTarget) || Retryable(err) || !strings.Contains(err.Error(), "1, 2") {
			t.Errorf("system %q: %v, want an invalid target listing 1, 2", id, err)
		}
	}
	if got := sim.Actions(); len(got) != 0 {
		t.Fatalf("a run without its system changed the BMC: %v", got)
	}
	target.SystemID = "2"
	rep, err := r.Run(testCtx(t), target, metal.WorkflowInspect)
	if err != nil {
		t.Fatalf("inspect of system 2: %v", err)
	}
	if got := sim.SystemActions("1"); len(got) != 0 {
		t.Errorf("system 1 was changed by system 2's inspect: %v", got)
	}
	want := []string{"reset On", "boot Pxe Once UEFI", "reset ForceOff", "reset On", "reset ForceOff"}
	if diff := cmp.Diff(want, sim.SystemActions("2")); diff != "" {
		t.Errorf("system 2 actions (-want +got):\n%s", diff)
	}
	if rep.Inventory == nil || rep.Inventory.Serial != "SIM0001-2" {
		t.Errorf("inventory %+v, want system 2's (serial SIM0001-2)", rep.Inventory)
	}
}

// TestLoginConnectionFailures: a BMC whose connection breaks during login is unreachable and
// retryable (it may be back later), classified by the error's type whatever the driver library
// wrote around it.
func TestLoginConnectionFailures(t *testing.T) {
	t.Parallel()
	for _, path := range []string{"/redfish/v1", "/redfish/v1/SessionService/Sessions", "/redfish/v1/Systems"} {
		t.Run(path, func(t *testing.T) {
			t.Parallel()
			sim, target := newSimWith(t, redfishsim.Config{Username: "operator", Password: testPassword})
			sim.InjectFault(redfishsim.Fault{Path: path, Hangup: true, Count: -1})
			_, err := (&Runner{Outbound: testOutbound}).Probe(testCtx(t), target)
			if !errors.Is(err, ErrUnreachable) || !Retryable(err) {
				t.Fatalf("probe: %v, want unreachable (retryable)", err)
			}
		})
	}
	// The driver library's wrapping, as bmclib builds it around a failed login: the words
	// around the error decide nothing.
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"EOF inside a url.Error", &url.Error{Op: "Post", URL: "https://bmc/redfish/v1/SessionService/Sessions", Err: io.EOF}},
		{"reset inside an OpError", &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}},
		{"a bare errno", syscall.EPIPE},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wrapped := fmt.Errorf("provider: gofish: %w\nno Opener implementations found: not supported", tc.err)
			if got := classify(wrapped); got != ErrUnreachable {
				t.Errorf("classify = %v, want unreachable", got)
			}
		})
	}
}

// TestIPMIAbortStopsARunningCommand: an abort landing while ipmitool is on its way to the BMC
// (held by the simulator's wrapper before it sends anything) kills it: the boot override never
// reaches the BMC, and nothing after it either.
func TestIPMIAbortStopsARunningCommand(t *testing.T) {
	t.Parallel()
	requireIPMISim(t)
	sim := startIPMISim(t)
	sim.setPower(false)
	sim.resetLogs()
	sim.Hold("chassis bootdev pxe")
	var aborted atomic.Bool
	check := func(context.Context) error {
		if aborted.Load() {
			return errors.New("the node was aborted")
		}
		return nil
	}
	r := sim.runner()
	r.CheckInterval = 10 * time.Millisecond
	done := make(chan error, 1)
	go func() {
		_, err := r.RunChecked(testCtx(t), sim.target, metal.WorkflowInspect, check)
		done <- err
	}()
	for i := 0; !sim.Held(); i++ {
		if i == 3000 {
			t.Fatal("the boot override never reached the hold")
		}
		time.Sleep(10 * time.Millisecond)
	}
	aborted.Store(true) // the abort commits while the command is on its way
	err := <-done
	sim.Release() // a command still alive would now reach the BMC
	if !errors.Is(err, ErrStopped) {
		t.Fatalf("run: %v, want stopped", err)
	}
	for _, l := range sim.lines("chassis.log") {
		if strings.HasPrefix(l, "boot") {
			t.Errorf("the BMC set the boot device after the abort: %v", sim.lines("chassis.log"))
		}
	}
	if got := sim.commands(t); got[len(got)-1] != ipPXE {
		t.Errorf("commands after the held one: %v", got)
	}
}

// TestIPMIInventoryWithoutFRU: a BMC with no FRU data is inspected from Get Device ID and the
// sensor data records; vendor, model and serial stay unknown (empty).
func TestIPMIInventoryWithoutFRU(t *testing.T) {
	t.Parallel()
	requireIPMISim(t)
	s := ipmisim.StartWith(t, ipmisim.Options{NoFRU: true})
	sim := &ipmiSim{Sim: s, target: Target{Address: "127.0.0.1", Port: s.Port, Protocol: IPMI, Username: ipmiUser, Password: seal.Secret(ipmiPassword)}}
	rep, err := sim.runner().Run(testCtx(t), sim.target, metal.WorkflowInspect)
	if err != nil {
		t.Fatalf("inspect: %v", err)
	}
	want := &Inventory{CPUs: 2, DIMMs: 3, BMCFirmware: "9.08"}
	if diff := cmp.Diff(want, rep.Inventory); diff != "" {
		t.Errorf("inventory (-want +got):\n%s", diff)
	}
	if rep.Auth != AuthRMCP {
		t.Errorf("auth %q, want %q", rep.Auth, AuthRMCP)
	}
}
