package bmc

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"better-compute.dev/compute/metal"
	"better-compute.dev/compute/provider/bmc/redfishsim"
)

const (
	ipStatus = "chassis power status"
	ipOn     = "chassis power on"
	ipOff    = "chassis power off"
	ipPXE    = "chassis bootdev pxe options=efiboot"
	ipDisk   = "chassis bootdev disk options=persistent,efiboot"
)

var ipInventory = []string{"fru print 0", "mc info", "sdr elist all"}

// collapseStatus folds each run of power reads into one.
func collapseStatus(cmds []string) []string {
	var out []string
	for _, c := range cmds {
		if c == ipStatus && len(out) > 0 && out[len(out)-1] == ipStatus {
			continue
		}
		out = append(out, c)
	}
	return out
}

func seq(parts ...any) []string {
	var out []string
	for _, p := range parts {
		switch v := p.(type) {
		case string:
			out = append(out, v)
		case []string:
			out = append(out, v...)
		}
	}
	return out
}

// TestIPMIWorkflowsAgainstIPMISim runs every workflow against OpenIPMI's ipmi_sim through
// ipmitool: the exact commands sent (one login per command, one cipher suite, the password only
// in the environment), what the chassis did (power, boot device, the device each power-on
// booted from) and, for inspect and commission, the reduced IPMI inventory.
func TestIPMIWorkflowsAgainstIPMISim(t *testing.T) {
	t.Parallel()
	requireIPMISim(t)
	for _, tc := range []struct {
		workflow  metal.Workflow
		on        bool
		commands  []string
		powerEnd  string   // the chassis's power at the end ("1" on), once settled
		bootEnd   string   // the chassis's boot device at the end
		boots     []string // devices the machine powered on into (nil: not checked)
		inventory bool
	}{
		// Every power change is followed by the reads that wait for it to settle (ipStatus after
		// ipOn and ipOff; a running machine is restarted by off and on, each waited for); runs of
		// reads are compared as one (collapseStatus).
		{metal.WorkflowInspect, false, seq(ipStatus, ipStatus, ipOn, ipStatus, ipPXE, ipStatus, ipOff, ipStatus, ipOn, ipStatus, ipInventory, ipOff, ipStatus), "0", "pxe", nil, true},
		{metal.WorkflowCommission, false, seq(ipStatus, ipStatus, ipPXE, ipStatus, ipOn, ipStatus, ipInventory, ipOff, ipStatus), "0", "pxe", []string{"pxe"}, true},
		{metal.WorkflowDeploy, false, seq(ipStatus, ipStatus, ipPXE, ipStatus, ipOn, ipStatus, ipDisk, ipStatus), "1", "default", []string{"pxe"}, false},
		{metal.WorkflowRescue, true, seq(ipStatus, ipStatus, ipPXE, ipStatus, ipOff, ipStatus, ipOn, ipStatus), "1", "pxe", []string{"pxe"}, false},
		{metal.WorkflowUnrescue, true, seq(ipStatus, ipStatus, ipDisk, ipStatus, ipOff, ipStatus, ipOn, ipStatus), "1", "default", []string{"default"}, false},
		{metal.WorkflowRelease, true, seq(ipStatus, ipStatus, ipOff, ipStatus, ipDisk, ipStatus), "0", "default", nil, false},
		{metal.WorkflowRetire, true, seq(ipStatus, ipStatus, ipOff, ipStatus), "0", "", nil, false},
	} {
		t.Run(string(tc.workflow), func(t *testing.T) {
			t.Parallel()
			sim := startIPMISim(t)
			sim.setPower(tc.on)
			sim.resetLogs()
			rep, err := sim.runner().Run(testCtx(t), sim.target, tc.workflow)
			if err != nil {
				t.Fatalf("Run: %v (report %+v)", err, rep)
			}
			if diff := cmp.Diff(collapseStatus(tc.commands), collapseStatus(sim.commands(t))); diff != "" {
				t.Errorf("ipmitool commands (-want +got):\n%s", diff)
			}
			// A cycle powers back on a second later: wait for the chassis to settle.
			for i := 0; i < 50 && sim.file("power") != tc.powerEnd; i++ {
				time.Sleep(100 * time.Millisecond)
			}
			if got := sim.file("power"); got != tc.powerEnd {
				t.Errorf("chassis power %q, want %q (log %v)", got, tc.powerEnd, sim.lines("chassis.log"))
			}
			if tc.bootEnd != "" && sim.file("boot") != tc.bootEnd {
				t.Errorf("boot device %q, want %q", sim.file("boot"), tc.bootEnd)
			}
			if tc.boots != nil {
				if diff := cmp.Diff(tc.boots, sim.lines("boots")); diff != "" {
					t.Errorf("boots (-want +got):\n%s", diff)
				}
			}
			if rep.Provider != DriverIpmitool || !strings.HasPrefix(rep.RawPower, "Chassis Power is") {
				t.Errorf("report provider %q raw power %q", rep.Provider, rep.RawPower)
			}
			if !tc.inventory {
				if rep.Inventory != nil {
					t.Errorf("inventory %+v", rep.Inventory)
				}
				return
			}
			want := &Inventory{Vendor: "Contoso", Model: "IPMI-7", Serial: "SN-IPMI-1", CPUs: 2, DIMMs: 3, BMCFirmware: "9.08"}
			if diff := cmp.Diff(want, rep.Inventory); diff != "" {
				t.Errorf("inventory (-want +got):\n%s", diff)
			}
		})
	}
}

// TestIPMIFailureClasses: a refused password is permanent after exactly one login (no second
// cipher suite), an unreachable BMC is retryable and says so, and neither names a Go type or
// blanks a word of ipmitool's message.
func TestIPMIFailureClasses(t *testing.T) {
	t.Parallel()
	requireIPMISim(t)
	t.Run("wrong password", func(t *testing.T) {
		t.Parallel()
		sim := startIPMISim(t)
		sim.resetLogs()
		target := sim.target
		target.Password = "not-the-password"
		_, err := sim.runner().Run(testCtx(t), target, metal.WorkflowDeploy)
		if !errors.Is(err, ErrAuth) || Retryable(err) {
			t.Fatalf("wrong password: %v, want permanent ErrAuth", err)
		}
		if got := sim.commands(t); len(got) != 1 {
			t.Errorf("%d ipmitool logins for one refused password, want 1: %v", len(got), got)
		}
		if len(sim.lines("chassis.log")) != 0 {
			t.Errorf("the chassis changed: %v", sim.lines("chassis.log"))
		}
		checkMessage(t, err)
	})
	t.Run("unreachable", func(t *testing.T) {
		t.Parallel()
		sim := startIPMISim(t)
		sim.resetLogs()
		target := sim.target
		target.Port = freeUDPPort(t) // nothing answers there
		r := sim.runner()
		r.RequestTimeout = 8 * time.Second
		_, err := r.Run(testCtx(t), target, metal.WorkflowInspect)
		if !errors.Is(err, ErrUnreachable) || !Retryable(err) {
			t.Fatalf("unreachable: %v, want retryable ErrUnreachable", err)
		}
		if got := sim.commands(t); len(got) != 1 {
			t.Errorf("%d ipmitool commands, want the one that found nobody: %v", len(got), got)
		}
		checkMessage(t, err)
	})
	t.Run("an unknown driver touches nothing", func(t *testing.T) {
		t.Parallel()
		sim := startIPMISim(t)
		sim.resetLogs()
		target := sim.target
		target.Driver = "nonesuch"
		_, err := sim.runner().Run(testCtx(t), target, metal.WorkflowInspect)
		if !errors.Is(err, ErrUnsupported) || Retryable(err) {
			t.Fatalf("unknown driver: %v", err)
		}
		if got := sim.commands(t); len(got) != 0 {
			t.Errorf("commands sent: %v", got)
		}
	})
}

func checkMessage(t *testing.T, err error) {
	t.Helper()
	msg := err.Error()
	t.Logf("error: %s", msg)
	if strings.Contains(msg, "*ipmitool") || strings.Contains(msg, ".Conn") || strings.Contains(msg, "[redacted] status") {
		t.Errorf("message %q names a Go type or blanks a word", msg)
	}
	if strings.Contains(msg, ipmiPassword) {
		t.Errorf("message %q holds the password", msg)
	}
}

// TestIPMIStopsAtTheCheck: an IPMI run asks the check (the metal reconciler's "has the node
// moved", which an abort answers) before every ipmitool command; once it refuses, the run stops
// with ErrStopped and no further command reaches the BMC.
func TestIPMIStopsAtTheCheck(t *testing.T) {
	t.Parallel()
	requireIPMISim(t)
	sim := startIPMISim(t)
	sim.setPower(false)
	sim.resetLogs()
	var asked atomic.Int32
	check := func(context.Context) error {
		if asked.Add(1) > 3 {
			return errors.New("the node was aborted")
		}
		return nil
	}
	_, err := sim.runner().RunChecked(testCtx(t), sim.target, metal.WorkflowInspect, check)
	if !errors.Is(err, ErrStopped) || !Retryable(err) {
		t.Fatalf("run: %v, want stopped", err)
	}
	// Asked before each of the two power reads and between steps; the fourth answer refuses the
	// power-on, which never goes out.
	if diff := cmp.Diff(seq(ipStatus, ipStatus), sim.commands(t)); diff != "" {
		t.Errorf("ipmitool commands after the check refused (-want +got):\n%s", diff)
	}
}

// TestProbeEveryKind: the probe (enrollment, new credentials) logs in and reads the power on
// each kind of BMC: Redfish in both layouts and IPMI, changing nothing.
func TestProbeEveryKind(t *testing.T) {
	t.Parallel()
	for _, layout := range []redfishsim.Layout{redfishsim.LayoutClassic, redfishsim.LayoutNamed} {
		t.Run("redfish-"+string(layout), func(t *testing.T) {
			t.Parallel()
			sim, target := newSimWith(t, redfishsim.Config{Layout: layout, PowerState: redfishsim.PowerOn, Username: "operator", Password: testPassword})
			rep, err := (&Runner{Outbound: testOutbound}).Probe(testCtx(t), target)
			if err != nil || rep.PowerAfter != PowerOn {
				t.Fatalf("probe: %v, power %q", err, rep.PowerAfter)
			}
			if got := sim.Actions(); len(got) != 0 {
				t.Errorf("the probe changed the machine: %v", got)
			}
		})
	}
	t.Run("ipmi", func(t *testing.T) {
		t.Parallel()
		requireIPMISim(t)
		sim := startIPMISim(t)
		sim.setPower(true)
		sim.resetLogs()
		rep, err := sim.runner().Probe(testCtx(t), sim.target)
		if err != nil || rep.PowerAfter != PowerOn {
			t.Fatalf("probe: %v, power %q", err, rep.PowerAfter)
		}
		for _, c := range sim.commands(t) {
			if c != ipStatus {
				t.Errorf("the probe sent %q", c)
			}
		}
	})
}
