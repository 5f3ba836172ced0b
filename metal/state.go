// Package metal is the bare-metal provision state machine, as data.
//
// A node rests in a stable state until a verb moves it. A verb that needs the machine enters a
// transient state, whose workflow the metal reconciler runs through the BMC (provider/bmc);
// the reconciler then completes it into its success state or fails it into its failure state,
// and a transient state that outlives its deadline fails too, so no node is left stuck after a
// crash. The allowed moves live in one table (table.go); everything here is derived from it.
// The package is pure: no database, no clock, no I/O.
package metal

import "fmt"

// State is a node's provision state, spelled as the API shows it.
type State string

// The provision states. Resting states wait for a verb; transient ones wait for the reconciler.
const (
	Enrolled         State = "enrolled"
	Inspecting       State = "inspecting"
	Inspected        State = "inspected"
	InspectFailed    State = "inspect-failed"
	Commissioning    State = "commissioning"
	Ready            State = "ready"
	CommissionFailed State = "commission-failed"
	Deploying        State = "deploying"
	Deployed         State = "deployed"
	DeployFailed     State = "deploy-failed"
	Rescuing         State = "rescuing"
	Rescue           State = "rescue"
	RescueFailed     State = "rescue-failed"
	// Unrescuing and UnrescueFailed leave rescue back to the deployed image (see table.go for
	// why the machine needs them).
	Unrescuing     State = "unrescuing"
	UnrescueFailed State = "unrescue-failed"
	Releasing      State = "releasing"
	ReleaseFailed  State = "release-failed"
	Retired        State = "retired"
)

// Verb is an API action on a node.
type Verb string

// The verbs. Abort is the only one aimed at a transient state.
const (
	Inspect    Verb = "inspect"
	Commission Verb = "commission"
	Deploy     Verb = "deploy"
	RescueVerb Verb = "rescue"
	Unrescue   Verb = "unrescue"
	Release    Verb = "release"
	Retire     Verb = "retire"
	Abort      Verb = "abort"
)

// Workflow names what the reconciler does at the BMC for a state; provider/bmc turns it into
// power and boot-device steps.
type Workflow string

// The workflows. WorkflowNone means there is nothing to do at the BMC.
const (
	WorkflowNone       Workflow = ""
	WorkflowInspect    Workflow = "inspect"
	WorkflowCommission Workflow = "commission"
	WorkflowDeploy     Workflow = "deploy"
	WorkflowRescue     Workflow = "rescue"
	WorkflowUnrescue   Workflow = "unrescue"
	WorkflowRelease    Workflow = "release"
	WorkflowRetire     Workflow = "retire"
)

var allStates = []State{
	Enrolled, Inspecting, Inspected, InspectFailed, Commissioning, Ready, CommissionFailed,
	Deploying, Deployed, DeployFailed, Rescuing, Rescue, RescueFailed, Unrescuing,
	UnrescueFailed, Releasing, ReleaseFailed, Retired,
}

var allVerbs = []Verb{Inspect, Commission, Deploy, RescueVerb, Unrescue, Release, Retire, Abort}

var allWorkflows = []Workflow{
	WorkflowInspect, WorkflowCommission, WorkflowDeploy, WorkflowRescue, WorkflowUnrescue,
	WorkflowRelease, WorkflowRetire,
}

// States lists every state, in lifecycle order (for proto enums, docs and exhaustive tests).
func States() []State { return append([]State(nil), allStates...) }

// Verbs lists every verb.
func Verbs() []Verb { return append([]Verb(nil), allVerbs...) }

// Workflows lists every workflow that does something at the BMC.
func Workflows() []Workflow { return append([]Workflow(nil), allWorkflows...) }

// ParseState checks a state name read from storage or input.
func ParseState(s string) (State, error) {
	for _, st := range allStates {
		if string(st) == s {
			return st, nil
		}
	}
	return "", fmt.Errorf("%w: %q", ErrUnknownState, s)
}

// ParseVerb checks a verb name read from input.
func ParseVerb(s string) (Verb, error) {
	for _, v := range allVerbs {
		if string(v) == s {
			return v, nil
		}
	}
	return "", fmt.Errorf("%w: %q", ErrUnknownVerb, s)
}
