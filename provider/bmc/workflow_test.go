package bmc

import (
	"errors"
	"strings"
	"testing"
	"time"

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
			[]string{"reset On", "boot Pxe Once UEFI", "reset ForceOff", "reset On", "reset ForceOff"},
			[]string{"Hdd", "Pxe"}, PowerOff, [2]string{"Pxe", "Disabled"}},
		{"inspect a running node skips power on", metal.WorkflowInspect, on, false,
			[]string{"boot Pxe Once UEFI", "reset ForceOff", "reset On", "reset ForceOff"},
			[]string{"Pxe"}, PowerOff, [2]string{"Pxe", "Disabled"}},
		{"commission an off node powers it on into PXE instead of cycling", metal.WorkflowCommission, off, false,
			[]string{"boot Pxe Once UEFI", "reset On", "reset ForceOff"},
			[]string{"Pxe"}, PowerOff, [2]string{"Pxe", "Disabled"}},
		{"commission a running node cycles it", metal.WorkflowCommission, on, false,
			[]string{"boot Pxe Once UEFI", "reset ForceOff", "reset On", "reset ForceOff"},
			[]string{"Pxe"}, PowerOff, [2]string{"Pxe", "Disabled"}},
		{"deploy: PXE once, boot it, then disk persistently", metal.WorkflowDeploy, off, false,
			[]string{"boot Pxe Once UEFI", "reset On", "boot Hdd Continuous UEFI"},
			[]string{"Pxe"}, PowerOn, [2]string{"Hdd", "Continuous"}},
		{"deploy a running legacy-boot node", metal.WorkflowDeploy, on, true,
			[]string{"boot Pxe Once Legacy", "reset ForceOff", "reset On", "boot Hdd Continuous Legacy"},
			[]string{"Pxe"}, PowerOn, [2]string{"Hdd", "Continuous"}},
		{"rescue a deployed node: PXE once and cycle", metal.WorkflowRescue, on, false,
			[]string{"boot Pxe Once UEFI", "reset ForceOff", "reset On"},
			[]string{"Pxe"}, PowerOn, [2]string{"Pxe", "Disabled"}},
		{"unrescue: disk persistently and cycle", metal.WorkflowUnrescue, on, false,
			[]string{"boot Hdd Continuous UEFI", "reset ForceOff", "reset On"},
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
		// Every workflow on every kind of Redfish BMC: both layouts (the classic ids bmclib's
		// vendor paths know, and the DMTF-mockup-like Systems/node-a7 found only through the
		// collections), a service with HTTP Basic only, one applying power changes late (each
		// change waited for: the same requests, the same end), and one in front of two systems
		// (the node is system 1; Actions would show any change of system 2).
		for _, kind := range []struct {
			name   string
			cfg    redfishsim.Config
			system string
		}{
			{"classic", redfishsim.Config{Layout: redfishsim.LayoutClassic}, ""},
			{"named", redfishsim.Config{Layout: redfishsim.LayoutNamed}, ""},
			{"basic-only", redfishsim.Config{BasicOnly: true}, ""},
			{"late-power", redfishsim.Config{PowerDelay: 100 * time.Millisecond}, ""},
			{"two-systems", redfishsim.Config{Systems: 2}, "1"},
		} {
			t.Run(kind.name+"/"+tc.reason, func(t *testing.T) {
				t.Parallel()
				cfg := kind.cfg
				cfg.PowerState, cfg.Username, cfg.Password = tc.power, "operator", testPassword
				sim, target := newSimWith(t, cfg)
				target.LegacyBoot, target.SystemID = tc.legacy, kind.system
				rep, err := settleRunner(30*time.Second).Run(testCtx(t), target, tc.workflow)
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
}

// TestInventoryLayouts reads the inventory of services laid out differently: the classic ids
// bmclib knows and a DMTF-mockup-like layout (Systems/node-a7...) whose DIMMs report only
// VolatileSizeMiB, with a GPU, an empty slot and Storage drives. Members are found from the
// collections in both, and every workflow's power and boot requests reach the same system.
func TestInventoryLayouts(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		layout redfishsim.Layout
		cfg    redfishsim.Config
		want   *Inventory
	}{
		{redfishsim.LayoutClassic, redfishsim.Config{}, &Inventory{
			Vendor: "Better Compute Labs", Model: "BC-1000", Serial: "SIM0001",
			CPUModel: "Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz", CPUs: 2, CPUCores: 32, CPUThreads: 64,
			MemoryBytes: 4 * 32768 << 20, DIMMs: 4, NICs: 1, Drives: 2, BIOSVersion: "2.4.1", BMCFirmware: "1.12.0",
		}},
		{redfishsim.LayoutNamed, redfishsim.Config{Manufacturer: "Contoso", Model: "C-7", SerialNumber: "A7", CPUs: 1, CoresPerCPU: 8, DIMMs: 3, DIMMSizeMiB: 16384, Drives: 4}, &Inventory{
			Vendor: "Contoso", Model: "C-7", Serial: "A7",
			CPUModel: "Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz", CPUs: 1, CPUCores: 8, CPUThreads: 16,
			MemoryBytes: 3 * 16384 << 20, DIMMs: 3, NICs: 2, Drives: 4, BIOSVersion: "2.4.1", BMCFirmware: "1.12.0",
		}},
	} {
		t.Run(string(tc.layout), func(t *testing.T) {
			t.Parallel()
			cfg := tc.cfg
			cfg.Layout, cfg.Username, cfg.Password = tc.layout, "operator", testPassword
			sim, target := newSimWith(t, cfg)
			for _, w := range []metal.Workflow{metal.WorkflowInspect, metal.WorkflowCommission} {
				rep, err := (&Runner{Outbound: testOutbound}).Run(testCtx(t), target, w)
				if err != nil {
					t.Fatalf("%s: %v", w, err)
				}
				if diff := cmp.Diff(tc.want, rep.Inventory); diff != "" {
					t.Errorf("%s inventory (-want +got):\n%s", w, diff)
				}
			}
			for _, r := range sim.Requests() {
				if r.Method != "GET" && r.Method != "DELETE" && r.Path != "/redfish/v1/SessionService/Sessions" &&
					!strings.HasPrefix(r.Path, sim.SystemPath()) {
					t.Errorf("%s %s: a change outside the system %s", r.Method, r.Path, sim.SystemPath())
				}
			}
			if got := sim.Actions(); len(got) == 0 {
				t.Error("no power or boot request reached the system")
			}
			if n := sim.SessionCount(); n != 0 {
				t.Errorf("%d sessions left open", n)
			}
		})
	}
}

// TestUnreadableInventoryFails: an inventory that cannot be read, or reads as no machine, fails
// the step with a clear reason; it never succeeds empty.
func TestUnreadableInventoryFails(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		reason    string
		layout    redfishsim.Layout
		fault     redfishsim.Fault
		kind      error
		retryable bool
		says      string
	}{
		{"processors missing", redfishsim.LayoutNamed,
			redfishsim.Fault{Method: "GET", Path: "/redfish/v1/Systems/node-a7/Processors", Status: 404, Count: -1},
			ErrUnsupported, false, "processors"},
		{"memory answers 500 every time", redfishsim.LayoutClassic,
			redfishsim.Fault{Method: "GET", Path: "/redfish/v1/Systems/1/Memory", Status: 500, Count: -1},
			ErrBMCFailure, true, "memory"},
		{"the processor collection is empty", redfishsim.LayoutNamed, redfishsim.Fault{}, ErrInventory, false, "no processor"},
	} {
		t.Run(tc.reason, func(t *testing.T) {
			t.Parallel()
			cfg := redfishsim.Config{Layout: tc.layout, Username: "operator", Password: testPassword}
			if tc.fault.Status == 0 {
				cfg.CPUs = -1 // no processor at all
			}
			sim, target := newSimWith(t, cfg)
			if tc.fault.Status != 0 {
				sim.InjectFault(tc.fault)
			}
			rep, err := (&Runner{Outbound: testOutbound}).Run(testCtx(t), target, metal.WorkflowCommission)
			if !errors.Is(err, tc.kind) || Retryable(err) != tc.retryable {
				t.Fatalf("commission: %v, want %v (retryable %v)", err, tc.kind, tc.retryable)
			}
			if rep.FailedStep != StepInventory || rep.Inventory != nil {
				t.Errorf("failed step %q, inventory %+v", rep.FailedStep, rep.Inventory)
			}
			if !strings.Contains(err.Error(), tc.says) {
				t.Errorf("error %q does not say %q", err, tc.says)
			}
		})
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
