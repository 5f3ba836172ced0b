package metal_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	v1 "better-compute.dev/compute/gen/go/bettercompute/compute/v1"
	"better-compute.dev/compute/metal"
	"better-compute.dev/compute/provider/bmc/ipmisim"
	"better-compute.dev/compute/reconcile/reconciletest"
)

// TestLifecycleOverIPMI drives one IPMI machine (OpenIPMI's ipmi_sim through ipmitool) through
// every verb via the API and the reconciler, as TestLifecycleAgainstSimulator does for Redfish:
// the state each verb ends in, the power and boot commands the BMC received (reads left out),
// and the reduced IPMI inventory (FRU 0, Get Device ID, SDR entities).
func TestLifecycleOverIPMI(t *testing.T) {
	t.Parallel()
	ipmisim.Require(t)
	sim := ipmisim.Start(t)
	sim.SetPower(false)
	e := newEnv(t, envOptions{})
	r := e.runner(t, envOptions{ipmiTool: sim.Tool})
	ctx := testCtx(t)
	node, err := e.svc.Metal.EnrollNode(e.editor, &v1.EnrollNodeRequest{TenantId: e.tenant, Name: "ipmi-node", Bmc: &v1.MetalBmcSettings{
		Address: "127.0.0.1", Port: int32(sim.Port), Protocol: "ipmi", Username: ipmisim.User, Password: ipmisim.Password,
	}})
	if err != nil {
		t.Fatalf("enroll: %v", err)
	}
	const (
		on, off   = "chassis power on", "chassis power off"
		pxe, disk = "chassis bootdev pxe options=efiboot", "chassis bootdev disk options=persistent,efiboot"
	)
	for _, step := range []struct {
		reason   string
		verb     metal.Verb // empty: the enrollment's probe
		powerOn  bool       // someone powered the machine on before the verb
		commands []string   // power and boot commands, in order
		state    metal.State
		power    string // the node's power state after the run (each change waited for)
	}{
		{"enrollment probes the BMC and changes nothing", "", false, nil, metal.Enrolled, "off"},
		{"inspect: on, PXE once, off and on, inventory, off", metal.Inspect, false, []string{on, pxe, off, on, off}, metal.Inspected, "off"},
		{"commission: PXE once, on, tests, off", metal.Commission, false, []string{pxe, on, off}, metal.Ready, "off"},
		{"deploy: PXE once, on, then disk persistently", metal.Deploy, false, []string{pxe, on, disk}, metal.Deployed, "on"},
		{"rescue: PXE once, off and on", metal.RescueVerb, false, []string{pxe, off, on}, metal.Rescue, "on"},
		{"unrescue: disk persistently, off and on", metal.Unrescue, false, []string{disk, off, on}, metal.Deployed, "on"},
		{"release: hard off, PXE off", metal.Release, false, []string{off, disk}, metal.Ready, "off"},
		{"retire powers off a machine someone turned on", metal.Retire, true, []string{off}, metal.Retired, "off"},
	} {
		sim.ResetLogs()
		if step.powerOn {
			sim.SetPower(true)
		}
		if step.verb != "" {
			if _, err := verb(e, step.verb, node.GetId()); err != nil {
				t.Fatalf("%s: %v", step.reason, err)
			}
		}
		if n := reconciletest.Drain(t, ctx, r); n == 0 {
			t.Fatalf("%s: the reconciler found nothing to do", step.reason)
		}
		var changes []string
		for _, c := range sim.Commands(t) {
			if c == on || c == off || c == pxe || c == disk {
				changes = append(changes, c)
			}
		}
		if diff := cmp.Diff(step.commands, changes); diff != "" {
			t.Errorf("%s: BMC commands (-want +got):\n%s", step.reason, diff)
		}
		node = e.get(t, node.GetId())
		if node.GetState() != string(step.state) || (step.power != "" && node.GetPowerState() != step.power) {
			t.Errorf("%s: node %s power %q, want %s %q", step.reason, node.GetState(), node.GetPowerState(), step.state, step.power)
		}
		if node.GetLastError() != "" || node.GetFailureReason() != "" || node.GetLastAnswer() == "" {
			t.Errorf("%s: error %q reason %q answer %q", step.reason, node.GetLastError(), node.GetFailureReason(), node.GetLastAnswer())
		}
		if step.verb == metal.Inspect || step.verb == metal.Commission {
			want := &v1.MetalInventory{Vendor: "Contoso", Model: "IPMI-7", Serial: "SN-IPMI-1", Cpus: 2, Dimms: 3, BmcFirmware: "9.08"}
			if diff := cmp.Diff(want.String(), node.GetInventory().String()); diff != "" {
				t.Errorf("%s: inventory (-want +got):\n%s", step.reason, diff)
			}
		}
	}
}
