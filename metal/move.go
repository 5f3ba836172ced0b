package metal

import (
	"errors"
	"fmt"
	"slices"
	"time"
)

// Errors, wrapped with %w. ErrInvalidMove maps to the API's INVALID_STATE; the unknown ones to
// INVALID_INPUT.
var (
	ErrInvalidMove  = errors.New("metal: move not allowed")
	ErrUnknownState = errors.New("metal: unknown state")
	ErrUnknownVerb  = errors.New("metal: unknown verb")
)

// MoveError says a verb (or a reconciler outcome) is not allowed in the node's current state.
// It carries that state so the API can name it in INVALID_STATE.
type MoveError struct {
	State State // the node's current state
	Verb  Verb  // the verb refused; empty when Complete or Fail was called on a resting state
}

// Error names the verb and the state that refused it.
func (e *MoveError) Error() string {
	if e.Verb == "" {
		return fmt.Sprintf("metal: node is %s, not in a transient state", e.State)
	}
	return fmt.Sprintf("metal: cannot %s a node that is %s", e.Verb, e.State)
}

// Is makes errors.Is(err, ErrInvalidMove) true.
func (e *MoveError) Is(target error) bool { return target == ErrInvalidMove }

// Transition is the outcome of an allowed move.
type Transition struct {
	From State
	Verb Verb
	// To is the state to record now: a transient state, or a resting one (abort's failure
	// state, retire's retired).
	To State
	// OnSuccess and OnFailure are where the reconciler moves To when its workflow succeeds or
	// fails; empty when To is resting.
	OnSuccess State
	OnFailure State
	// Workflow is what the reconciler runs at the BMC after the move. With a resting To
	// (retire) it is best effort: its outcome is recorded and the state stays.
	Workflow Workflow
	// Deadline bounds the time in To; past it the reconciler fails the node into OnFailure.
	// Zero when To is resting.
	Deadline time.Duration
}

// Transient reports whether the move leaves the node in a transient state.
func (t Transition) Transient() bool { return IsTransient(t.To) }

// Move checks verb against the table from state from and says where it leads.
func Move(from State, verb Verb) (Transition, error) {
	if !slices.Contains(allStates, from) {
		return Transition{}, fmt.Errorf("%w: %q", ErrUnknownState, from)
	}
	if !slices.Contains(allVerbs, verb) {
		return Transition{}, fmt.Errorf("%w: %q", ErrUnknownVerb, verb)
	}
	if verb == Abort {
		if r, ok := rowOfTransient(from); ok {
			return Transition{From: from, Verb: Abort, To: r.failure, Workflow: WorkflowNone}, nil
		}
		return Transition{}, &MoveError{State: from, Verb: verb}
	}
	for _, r := range table {
		if r.verb != verb || !slices.Contains(r.from, from) {
			continue
		}
		if r.transient == "" {
			return Transition{From: from, Verb: verb, To: r.success, Workflow: r.workflow}, nil
		}
		return Transition{
			From: from, Verb: verb, To: r.transient, OnSuccess: r.success, OnFailure: r.failure,
			Workflow: r.workflow, Deadline: r.deadline,
		}, nil
	}
	return Transition{}, &MoveError{State: from, Verb: verb}
}

// Allowed lists the verbs Move accepts from state, in Verbs() order (for the API's view of a
// node and for UIs).
func Allowed(state State) []Verb {
	var out []Verb
	for _, v := range allVerbs {
		if _, err := Move(state, v); err == nil {
			out = append(out, v)
		}
	}
	return out
}

// Complete is where a transient state goes when its workflow succeeds.
func Complete(state State) (State, error) {
	r, ok := rowOfTransient(state)
	if !ok {
		return "", &MoveError{State: state}
	}
	return r.success, nil
}

// Fail is where a transient state goes when its workflow fails, is aborted or expires.
func Fail(state State) (State, error) {
	r, ok := rowOfTransient(state)
	if !ok {
		return "", &MoveError{State: state}
	}
	return r.failure, nil
}

// WorkflowOf is the workflow the reconciler runs while a node is in a transient state
// (WorkflowNone for a resting one). A restarted reconciler re-drives a transient node with it.
func WorkflowOf(state State) Workflow {
	r, _ := rowOfTransient(state)
	return r.workflow
}

// Deadline is how long a node may stay in a transient state (zero for a resting one).
func Deadline(state State) time.Duration {
	r, _ := rowOfTransient(state)
	return r.deadline
}

// Expired reports whether a node that entered a transient state at enteredAt has outlived the
// state's deadline at now. Resting states never expire. The caller supplies now (the database
// clock or a test's), so this stays pure.
func Expired(state State, enteredAt, now time.Time) bool {
	d := Deadline(state)
	return d > 0 && !now.Before(enteredAt.Add(d))
}

// IsTransient reports whether state waits for the reconciler.
func IsTransient(state State) bool {
	_, ok := rowOfTransient(state)
	return ok
}

// IsResting reports whether state is a known state that waits for a verb (terminal included).
func IsResting(state State) bool {
	return slices.Contains(allStates, state) && !IsTransient(state)
}

// IsTerminal reports whether no verb leaves state.
func IsTerminal(state State) bool {
	return slices.Contains(allStates, state) && len(Allowed(state)) == 0
}

// IsFailure reports whether state is some transient state's failure state; such a node keeps
// the failure reason and the BMC's last answer.
func IsFailure(state State) bool {
	for _, r := range table {
		if r.transient != "" && r.failure == state {
			return true
		}
	}
	return false
}

func rowOfTransient(state State) (row, bool) {
	if state == "" {
		return row{}, false
	}
	for _, r := range table {
		if r.transient == state {
			return r, true
		}
	}
	return row{}, false
}
