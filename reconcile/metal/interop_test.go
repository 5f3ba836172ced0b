package metal_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"better-compute.dev/compute/apierr"
	v1 "better-compute.dev/compute/gen/go/bettercompute/compute/v1"
	"better-compute.dev/compute/gen/go/bettercompute/compute/v1/errcode"
	"better-compute.dev/compute/metal"
	"better-compute.dev/compute/netguard"
	"better-compute.dev/compute/provider/bmc"
	"better-compute.dev/compute/provider/bmc/ipmisim"
	"better-compute.dev/compute/provider/bmc/redfishsim"
	"better-compute.dev/compute/reconcile"
	"better-compute.dev/compute/reconcile/reconciletest"
	"better-compute.dev/compute/seal"
)

// The tests of this file run BMCs that behave as ones the project did not write through the API
// and the reconciler: the node's view of the authentication, the power reading and its time, the
// requested power, its system, and the classes of their failures.

// TestBasicOnlyBMCThroughTheAPI: a Redfish service without a SessionService is probed and
// inspected with HTTP Basic, and the node says so.
func TestBasicOnlyBMCThroughTheAPI(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{sim: redfishsim.Config{BasicOnly: true}})
	ctx := testCtx(t)
	r := e.runner(t, envOptions{})
	node := e.enroll(t, simPassword)
	reconciletest.Drain(t, ctx, r)
	got := e.get(t, node.GetId())
	if got.GetLastError() != "" || got.GetBmc().GetAuthentication() != "basic" || got.GetPowerState() != "off" || got.GetPowerReadTime() == nil {
		t.Fatalf("after the probe: error %q auth %q power %q read %v", got.GetLastError(), got.GetBmc().GetAuthentication(), got.GetPowerState(), got.GetPowerReadTime())
	}
	if _, err := verb(e, metal.Inspect, node.GetId()); err != nil {
		t.Fatal(err)
	}
	reconciletest.Drain(t, ctx, r)
	got = e.get(t, node.GetId())
	if got.GetState() != "inspected" || got.GetInventory().GetCpus() != 2 {
		t.Errorf("inspect: %s (%q) inventory %v", got.GetState(), got.GetFailureReason(), got.GetInventory())
	}
}

// TestLatePowerThroughTheAPI: a BMC applying power changes late ends inspect really off, and the
// node's power is the BMC's settled reading; a change that never shows fails inspect with the
// reason, the reading and the requested state.
func TestLatePowerThroughTheAPI(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		delay     time.Duration
		settle    time.Duration
		state     string
		power     string
		requested string
	}{
		{"settles", 150 * time.Millisecond, 30 * time.Second, "inspected", "off", ""},
		{"never settles", time.Hour, 100 * time.Millisecond, "inspect-failed", "off", "on"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, envOptions{sim: redfishsim.Config{PowerDelay: tc.delay}})
			ctx := testCtx(t)
			r := e.runner(t, envOptions{settle: tc.settle})
			node := e.enroll(t, simPassword)
			reconciletest.Drain(t, ctx, r)
			if _, err := verb(e, metal.Inspect, node.GetId()); err != nil {
				t.Fatal(err)
			}
			reconciletest.Drain(t, ctx, r)
			got := e.get(t, node.GetId())
			if got.GetState() != tc.state || got.GetPowerState() != tc.power || got.GetPowerRequested() != tc.requested {
				t.Errorf("state %s power %q requested %q, want %s %q %q (reason %q)", got.GetState(), got.GetPowerState(),
					got.GetPowerRequested(), tc.state, tc.power, tc.requested, got.GetFailureReason())
			}
			if tc.requested != "" && !strings.Contains(got.GetFailureReason(), "did not settle") {
				t.Errorf("failure reason %q does not say the power did not settle", got.GetFailureReason())
			}
			if tc.requested == "" && (e.sim.PowerState() != redfishsim.PowerOff || e.sim.PendingPower() != 0) {
				t.Errorf("the BMC ends %s with %d changes pending, want off", e.sim.PowerState(), e.sim.PendingPower())
			}
		})
	}
}

// TestTwoSystemsThroughTheAPI: enrollment behind a BMC with two systems must name one (refused
// with the ids otherwise), two nodes share the BMC with different systems, a third naming a taken
// system is a duplicate, and one node's inspect changes and reads its own system only.
func TestTwoSystemsThroughTheAPI(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{sim: redfishsim.Config{Systems: 2}})
	lister := &bmc.Runner{Outbound: netguard.Policy{Allow: netguard.AllowLoopback()}}
	e.svc.Metal.Systems = func(ctx context.Context, b *v1.MetalBmcSettings) ([]string, error) {
		return lister.SystemIDs(ctx, bmc.Target{Address: b.GetAddress(), Port: int(b.GetPort()), Protocol: bmc.Redfish,
			Username: b.GetUsername(), Password: seal.Secret(b.GetPassword()), CACertPEM: []byte(b.GetCaCertPem())})
	}
	ctx := testCtx(t)
	r := e.runner(t, envOptions{})
	enroll := func(name, system string) (*v1.MetalNode, error) {
		req := e.enrollRequest(name, simPassword)
		req.Bmc.SystemId = system
		return e.svc.Metal.EnrollNode(e.editor, req)
	}
	for _, tc := range []struct{ name, system, want string }{
		{"no-system", "", "1, 2"},
		{"unknown-system", "9", "1, 2"},
	} {
		_, err := enroll(tc.name, tc.system)
		var ae *apierr.Error
		if !errors.As(err, &ae) || ae.Code != errcode.InvalidInput || ae.Field != "bmc.systemId" || !strings.Contains(ae.Message, tc.want) {
			t.Errorf("%s: %v, want INVALID_INPUT on bmc.systemId listing %s", tc.name, err, tc.want)
		}
	}
	if _, err := enroll("blade-1", "1"); err != nil {
		t.Fatalf("enroll system 1: %v", err)
	}
	blade2, err := enroll("blade-2", "2")
	if err != nil {
		t.Fatalf("enroll system 2 on the same BMC: %v", err)
	}
	if _, err := enroll("blade-2-again", "2"); apierr.CodeOf(err) != errcode.InvalidInput {
		t.Errorf("a second node for system 2: %v, want a duplicate (INVALID_INPUT)", err)
	}
	reconciletest.Drain(t, ctx, r)
	if _, err := verb(e, metal.Inspect, blade2.GetId()); err != nil {
		t.Fatal(err)
	}
	reconciletest.Drain(t, ctx, r)
	got := e.get(t, blade2.GetId())
	if got.GetState() != "inspected" || got.GetInventory().GetSerial() != "SIM0001-2" || got.GetBmc().GetSystemId() != "2" {
		t.Errorf("blade 2: %s (%q) inventory %v system %q", got.GetState(), got.GetFailureReason(), got.GetInventory(), got.GetBmc().GetSystemId())
	}
	if a := e.sim.SystemActions("1"); len(a) != 0 {
		t.Errorf("system 1 changed by blade 2's inspect: %v", a)
	}
	if diff := cmp.Diff([]string{"reset On", "boot Pxe Once UEFI", "reset ForceOff", "reset On", "reset ForceOff"}, e.sim.SystemActions("2")); diff != "" {
		t.Errorf("system 2 actions (-want +got):\n%s", diff)
	}
}

// TestBMCDyingAtLoginIsRetried: a BMC whose connection breaks during login is unreachable: the
// node keeps its state and its probe, shows the error and is tried again; nothing says "not
// supported".
func TestBMCDyingAtLoginIsRetried(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	ctx := testCtx(t)
	r := e.runner(t, envOptions{})
	e.sim.InjectFault(redfishsim.Fault{Method: "POST", Path: "/redfish/v1/SessionService/Sessions", Hangup: true, Count: 1})
	node := e.enroll(t, simPassword)
	if n, err := r.RunOnce(ctx); err != nil || n != 1 {
		t.Fatalf("run: %d %v", n, err)
	}
	got := e.get(t, node.GetId())
	if got.GetState() != "enrolled" || !strings.HasPrefix(got.GetLastError(), "unreachable") {
		t.Fatalf("after the broken login: %s error %q", got.GetState(), got.GetLastError())
	}
	if w := e.workItem(t, node.GetId()); w.Attempts != 1 {
		t.Errorf("work item attempts %d, want 1 (retried with backoff)", w.Attempts)
	}
	e.clock.Advance(time.Minute)
	reconciletest.Drain(t, ctx, r)
	if got := e.get(t, node.GetId()); got.GetLastError() != "" || got.GetPowerState() != "off" {
		t.Errorf("after the retry: error %q power %q", got.GetLastError(), got.GetPowerState())
	}
}

// TestIPMIAbortStopsARunningIpmitool: an abort answered while an IPMI inspect's boot override is
// on its way (ipmitool started, nothing sent yet) stops that ipmitool: the BMC never sets the
// boot device, and the node is inspect-failed.
func TestIPMIAbortStopsARunningIpmitool(t *testing.T) {
	t.Parallel()
	ipmisim.Require(t)
	sim := ipmisim.Start(t)
	sim.SetPower(false)
	e := newEnv(t, envOptions{})
	ctx := testCtx(t)
	r := e.runner(t, envOptions{ipmiTool: sim.Tool, checkEvery: 10 * time.Millisecond})
	node, err := e.svc.Metal.EnrollNode(e.editor, &v1.EnrollNodeRequest{TenantId: e.tenant, Name: "ipmi-node", Bmc: &v1.MetalBmcSettings{
		Address: "127.0.0.1", Port: int32(sim.Port), Protocol: "ipmi", Username: ipmisim.User, Password: ipmisim.Password,
	}})
	if err != nil {
		t.Fatal(err)
	}
	reconciletest.Drain(t, ctx, r)
	sim.ResetLogs()
	sim.Hold("chassis bootdev pxe")
	if _, err := verb(e, metal.Inspect, node.GetId()); err != nil {
		t.Fatal(err)
	}
	abortWhen(t, e, r, node.GetId(), "the boot override started", sim.Held)
	sim.Release() // an ipmitool still alive would now reach the BMC
	reconciletest.Drain(t, ctx, r)
	for _, l := range sim.Lines("chassis.log") {
		if strings.HasPrefix(l, "boot") {
			t.Errorf("the BMC set a boot device after the abort: %v", sim.Lines("chassis.log"))
		}
	}
	if got := e.get(t, node.GetId()); got.GetState() != "inspect-failed" || got.GetBmc().GetAuthentication() != "rmcp+" {
		t.Errorf("state %s auth %q, want inspect-failed over rmcp+", got.GetState(), got.GetBmc().GetAuthentication())
	}
}

// TestPowerRequestedWhileSettling: while the BMC has not applied a power change, the node shows
// its reading (off, with its time) and the requested state (on); an abort then stops the wait.
func TestPowerRequestedWhileSettling(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{sim: redfishsim.Config{PowerDelay: time.Hour}})
	ctx := testCtx(t)
	r := e.runner(t, envOptions{settle: time.Minute, checkEvery: 10 * time.Millisecond})
	node := e.enroll(t, simPassword)
	reconciletest.Drain(t, ctx, r)
	if _, err := verb(e, metal.Inspect, node.GetId()); err != nil {
		t.Fatal(err)
	}
	abortWhen(t, e, r, node.GetId(), "the node showed the requested power", func() bool {
		got := e.get(t, node.GetId())
		if got.GetPowerRequested() != "on" {
			return false
		}
		if got.GetPowerState() != "off" || got.GetPowerReadTime() == nil || got.GetState() != "inspecting" {
			t.Errorf("while settling: power %q read %v state %s, want off, a time, inspecting", got.GetPowerState(), got.GetPowerReadTime(), got.GetState())
		}
		return true
	})
	if got := e.get(t, node.GetId()); got.GetState() != "inspect-failed" || len(e.sim.Actions()) != 1 {
		t.Errorf("after the abort: %s, actions %v (want only the power-on)", got.GetState(), e.sim.Actions())
	}
}

// abortWhen runs the reconciler once in the background, aborts the node once cond holds (while
// the run is busy), and returns when the run has ended.
func abortWhen(t *testing.T, e *env, r *reconcile.Runner, nodeID, what string, cond func() bool) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = r.RunOnce(testCtx(t))
	}()
	for i := 0; !cond(); i++ {
		if i == 3000 { // only against a broken build; nothing asserts on time
			t.Fatalf("never reached: %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := verb(e, metal.Abort, nodeID); err != nil {
		t.Fatal(err)
	}
	<-done
}
