package metal

import "time"

// row is one verb of the provision table: the states it may start from, the transient state it
// enters, where that transient state completes or fails to, the workflow the reconciler runs
// there, and how long the transient state may last before it is failed.
type row struct {
	verb      Verb
	from      []State
	transient State // empty: the verb lands on success at once (retire)
	success   State
	failure   State
	workflow  Workflow
	deadline  time.Duration
}

// table is the only source of allowed moves; Move, Complete, Fail, IsTransient and the rest are
// derived from it. Abort has no row: it is allowed from every transient state below and goes to
// that state's failure state.
//
// It refines the design's starting table against OpenStack Ironic's provision state machine and
// MAAS's node status transitions:
//
//   - inspect: Ironic inspects a node from "manageable" at any time, so besides a new or failed
//     node, an inspected, ready or commission-failed node may be inspected again (after a
//     hardware change). It lands on inspected, so the node must pass commissioning again before
//     it can be deployed: new hardware is never deployed untested.
//   - commission: from inspected, and again from ready or after a failure, as MAAS allows.
//     Deadline 20 min (MAAS's commissioning timeout).
//   - deploy: from ready, and retried from deploy-failed (MAAS: failed deployment may deploy
//     again once reallocated). Deadline 40 min (MAAS).
//   - rescue: only from deployed, and retried from rescue-failed or unrescue-failed, which only
//     descend from deployed. The starting table also allowed deploy-failed; refused here because
//     unrescue lands on deployed, so rescue+unrescue would launder a failed deployment into
//     "deployed" (Ironic likewise rescues only active nodes). Deadline 20 min (MAAS's
//     entering-rescue timeout).
//   - unrescue (added): leaves rescue back to the deployed image without wiping it. Without it
//     the only way out of rescue is release, which returns the machine to the pool and costs the
//     tenant their disk; Ironic (unrescuing / unrescue failed) and MAAS (exiting rescue mode /
//     failed exiting rescue mode) both have it. Also from rescue-failed: booting the disk again
//     is the tenant's way back when the rescue image never came up. Deadline 5 min (MAAS's
//     exiting-rescue timeout).
//   - release: from every state in which a tenant's image may be on the disk (deployed,
//     deploy-failed, rescue, rescue-failed, unrescue-failed) and retried from release-failed,
//     which the starting table missed (MAAS: failed releasing may release again). Deadline 5
//     min (MAAS).
//   - retire: terminal, from the resting states that hold no tenant's image (enrolled,
//     inspected, inspect-failed, ready, commission-failed) and from release-failed, which is how
//     an operator writes off a machine whose wipe keeps failing. The starting table allowed every
//     resting state but deployed and rescue; deploy-failed, rescue-failed and unrescue-failed
//     are refused here too because the machine still belongs to a tenant: release it first.
//     Retire has no transient state: the node is retired at once and the reconciler powers it
//     off as best effort (a machine whose BMC is gone must still be retirable).
//   - abort: from every transient state into its failure state, running nothing at the BMC:
//     the next verb's workflow sets power and boot device anyway, and leaving the machine as it
//     was keeps the evidence an operator looks at in the failure state.
//
// Inspecting's deadline is 20 min like MAAS's commissioning (which includes inspection).
var table = []row{
	{verb: Inspect, from: []State{Enrolled, Inspected, InspectFailed, Ready, CommissionFailed},
		transient: Inspecting, success: Inspected, failure: InspectFailed,
		workflow: WorkflowInspect, deadline: 20 * time.Minute},
	{verb: Commission, from: []State{Inspected, Ready, CommissionFailed},
		transient: Commissioning, success: Ready, failure: CommissionFailed,
		workflow: WorkflowCommission, deadline: 20 * time.Minute},
	{verb: Deploy, from: []State{Ready, DeployFailed},
		transient: Deploying, success: Deployed, failure: DeployFailed,
		workflow: WorkflowDeploy, deadline: 40 * time.Minute},
	{verb: RescueVerb, from: []State{Deployed, RescueFailed, UnrescueFailed},
		transient: Rescuing, success: Rescue, failure: RescueFailed,
		workflow: WorkflowRescue, deadline: 20 * time.Minute},
	{verb: Unrescue, from: []State{Rescue, RescueFailed, UnrescueFailed},
		transient: Unrescuing, success: Deployed, failure: UnrescueFailed,
		workflow: WorkflowUnrescue, deadline: 5 * time.Minute},
	{verb: Release, from: []State{Deployed, DeployFailed, Rescue, RescueFailed, UnrescueFailed, ReleaseFailed},
		transient: Releasing, success: Ready, failure: ReleaseFailed,
		workflow: WorkflowRelease, deadline: 5 * time.Minute},
	{verb: Retire, from: []State{Enrolled, Inspected, InspectFailed, Ready, CommissionFailed, ReleaseFailed},
		success: Retired, workflow: WorkflowRetire},
}
