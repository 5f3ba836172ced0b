package bmc

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"better-compute.dev/compute/metal"
	"better-compute.dev/compute/provider/bmc/redfishsim"
)

func TestWorkflowsAgainstSimulator(t *testing.T) {
	t.Parallel()
	const (
		on, off = redfishsim.PowerOn, redfishsim.PowerOff
	)
	for _, tc := range []struct {
		reason     string
		workflow   metal.Workflow
		power      string
		legacy     bool
		actions    []string // exact power and boot requests the BMC accepted
		boots      []string // what the machine started from
		powerAfter PowerState
		bootAfter  [2]string // override target and enabled at the end
	}{
		{"inspect an off node: on, PXE once, cycle into PXE, inventory, off", metal.WorkflowInspect, off, false,
			[]string{"reset On", "boot Pxe Once UEFI", "reset ForceRestart", "reset ForceOff"},
			[]string{"Hdd", "Pxe"}, PowerOff, [2]string{"Pxe", "Disabled"}},
		{"inspect a running node skips power on", metal.WorkflowInspect, on, false,
			[]string{"boot Pxe Once UEFI", "reset ForceRestart", "reset ForceOff"},
			[]string{"Pxe"}, PowerOff, [2]string{"Pxe", "Disabled"}},
		{"commission an off node powers it on into PXE instead of cycling", metal.WorkflowCommission, off, false,
			[]string{"boot Pxe Once UEFI", "reset On", "reset ForceOff"},
			[]string{"Pxe"}, PowerOff, [2]string{"Pxe", "Disabled"}},
		{"commission a running node cycles it", metal.WorkflowCommission, on, false,
			[]string{"boot Pxe Once UEFI", "reset ForceRestart", "reset ForceOff"},
			[]string{"Pxe"}, PowerOff, [2]string{"Pxe", "Disabled"}},
		{"deploy: PXE once, boot it, then disk persistently", metal.WorkflowDeploy, off, false,
			[]string{"boot Pxe Once UEFI", "reset On", "boot Hdd Continuous UEFI"},
			[]string{"Pxe"}, PowerOn, [2]string{"Hdd", "Continuous"}},
		{"deploy a running legacy-boot node", metal.WorkflowDeploy, on, true,
			[]string{"boot Pxe Once Legacy", "reset ForceRestart", "boot Hdd Continuous Legacy"},
			[]string{"Pxe"}, PowerOn, [2]string{"Hdd", "Continuous"}},
		{"rescue a deployed node: PXE once and cycle", metal.WorkflowRescue, on, false,
			[]string{"boot Pxe Once UEFI", "reset ForceRestart"},
			[]string{"Pxe"}, PowerOn, [2]string{"Pxe", "Disabled"}},
		{"unrescue: disk persistently and cycle", metal.WorkflowUnrescue, on, false,
			[]string{"boot Hdd Continuous UEFI", "reset ForceRestart"},
			[]string{"Hdd"}, PowerOn, [2]string{"Hdd", "Continuous"}},
		{"release a running node: hard off, PXE off", metal.WorkflowRelease, on, false,
			[]string{"reset ForceOff", "boot Hdd Continuous UEFI"},
			nil, PowerOff, [2]string{"Hdd", "Continuous"}},
		{"release an off node sends no power request", metal.WorkflowRelease, off, false,
			[]string{"boot Hdd Continuous UEFI"},
			nil, PowerOff, [2]string{"Hdd", "Continuous"}},
		{"retire a running node powers it off", metal.WorkflowRetire, on, false,
			[]string{"reset ForceOff"}, nil, PowerOff, [2]string{"None", "Disabled"}},
		{"retire an off node sends nothing", metal.WorkflowRetire, off, false,
			nil, nil, PowerOff, [2]string{"None", "Disabled"}},
	} {
		t.Run(tc.reason, func(t *testing.T) {
			t.Parallel()
			sim, target := newSim(t, tc.power, testPassword)
			target.LegacyBoot = tc.legacy
			rep, err := (&Runner{Outbound: testOutbound}).Run(testCtx(t), target, tc.workflow)
			if err != nil {
				t.Fatalf("Run: %v (report %+v)", err, rep)
			}
			if diff := cmp.Diff(tc.actions, sim.Actions()); diff != "" {
				t.Errorf("BMC actions (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.boots, sim.Boots()); diff != "" {
				t.Errorf("boots (-want +got):\n%s", diff)
			}
			wantSteps := append([]Step{StepOpen, StepPowerState}, Plan(tc.workflow)...)
			if diff := cmp.Diff(wantSteps, stepNames(rep)); diff != "" {
				t.Errorf("report steps (-want +got):\n%s", diff)
			}
			if rep.Provider != DriverGofish || rep.FailedStep != "" || rep.LastAnswer == "" {
				t.Errorf("report provider %q failed %q last answer %q", rep.Provider, rep.FailedStep, rep.LastAnswer)
			}
			wantBefore := PowerOff
			if tc.power == on {
				wantBefore = PowerOn
			}
			if rep.PowerBefore != wantBefore || rep.PowerAfter != tc.powerAfter {
				t.Errorf("power before/after = %s/%s, want %s/%s", rep.PowerBefore, rep.PowerAfter, wantBefore, tc.powerAfter)
			}
			if target, enabled, _ := sim.Boot(); [2]string{target, enabled} != tc.bootAfter {
				t.Errorf("boot override at the end = %s/%s, want %v", target, enabled, tc.bootAfter)
			}
			if n := sim.SessionCount(); n != 0 {
				t.Errorf("%d sessions left open: the run must log out", n)
			}
			hasInventory := tc.workflow == metal.WorkflowInspect || tc.workflow == metal.WorkflowCommission
			if (rep.Inventory != nil) != hasInventory {
				t.Errorf("inventory = %+v, want present=%v", rep.Inventory, hasInventory)
			}
		})
	}
}

func TestInventorySummary(t *testing.T) {
	t.Parallel()
	_, target := newSim(t, redfishsim.PowerOff, testPassword)
	rep, err := (&Runner{Outbound: testOutbound}).Run(testCtx(t), target, metal.WorkflowInspect)
	if err != nil {
		t.Fatal(err)
	}
	want := &Inventory{
		Vendor: "Better Compute Labs", Model: "BC-1000", Serial: "SIM0001",
		CPUModel: "Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz", CPUs: 2, CPUCores: 32, CPUThreads: 64,
		MemoryBytes: 4 * 32768 << 20, DIMMs: 4, BIOSVersion: "2.4.1", BMCFirmware: "1.12.0",
	}
	if diff := cmp.Diff(want, rep.Inventory); diff != "" {
		t.Errorf("inventory (-want +got):\n%s", diff)
	}
}

func TestBasicAuthAndProbe(t *testing.T) {
	t.Parallel()
	sim, target := newSim(t, redfishsim.PowerOn, testPassword)
	target.BasicAuth = true
	rep, err := (&Runner{Outbound: testOutbound}).Probe(testCtx(t), target)
	if err != nil {
		t.Fatal(err)
	}
	if rep.PowerBefore != PowerOn || rep.RawPower != "On" {
		t.Errorf("probe power = %s (%q)", rep.PowerBefore, rep.RawPower)
	}
	if len(sim.Actions()) != 0 {
		t.Errorf("a probe changed the machine: %v", sim.Actions())
	}
	for _, r := range sim.Requests() {
		if r.Path == "/redfish/v1/SessionService/Sessions" {
			t.Errorf("basic auth opened a session: %+v", r)
		}
		if r.Path == "/redfish/v1/Systems/1" && r.Auth != "basic" {
			t.Errorf("system read authenticated by %q, want basic", r.Auth)
		}
	}
}

func TestWorkflowNoneAndPlans(t *testing.T) {
	t.Parallel()
	rep, err := (&Runner{Outbound: testOutbound}).Run(testCtx(t), Target{}, metal.WorkflowNone)
	if err != nil || len(rep.Steps) != 0 {
		t.Fatalf("WorkflowNone: %+v, %v", rep, err)
	}
	for _, w := range metal.Workflows() {
		if len(Plan(w)) == 0 {
			t.Errorf("workflow %s has no plan", w)
		}
	}
}
