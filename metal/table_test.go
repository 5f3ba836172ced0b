package metal

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// allowed is the provision table written out by hand, independently of table.go: for each
// state, the verbs it accepts and the state each one records. Every pair not listed must be
// refused. Keep it in sync with the reasoning in table.go's comment.
var allowed = map[State]map[Verb]State{
	Enrolled:         {Inspect: Inspecting, Retire: Retired},
	Inspecting:       {Abort: InspectFailed},
	Inspected:        {Inspect: Inspecting, Commission: Commissioning, Retire: Retired},
	InspectFailed:    {Inspect: Inspecting, Retire: Retired},
	Commissioning:    {Abort: CommissionFailed},
	Ready:            {Inspect: Inspecting, Commission: Commissioning, Deploy: Deploying, Retire: Retired},
	CommissionFailed: {Inspect: Inspecting, Commission: Commissioning, Retire: Retired},
	Deploying:        {Abort: DeployFailed},
	Deployed:         {RescueVerb: Rescuing, Release: Releasing},
	DeployFailed:     {Deploy: Deploying, Release: Releasing},
	Rescuing:         {Abort: RescueFailed},
	Rescue:           {Unrescue: Unrescuing, Release: Releasing},
	RescueFailed:     {RescueVerb: Rescuing, Unrescue: Unrescuing, Release: Releasing},
	Unrescuing:       {Abort: UnrescueFailed},
	UnrescueFailed:   {RescueVerb: Rescuing, Unrescue: Unrescuing, Release: Releasing},
	Releasing:        {Abort: ReleaseFailed},
	ReleaseFailed:    {Release: Releasing, Retire: Retired},
	Retired:          {},
}

// transient is what each transient state does, written out by hand.
var transient = map[State]struct {
	success, failure State
	workflow         Workflow
	deadline         time.Duration
}{
	Inspecting:    {Inspected, InspectFailed, WorkflowInspect, 20 * time.Minute},
	Commissioning: {Ready, CommissionFailed, WorkflowCommission, 20 * time.Minute},
	Deploying:     {Deployed, DeployFailed, WorkflowDeploy, 40 * time.Minute},
	Rescuing:      {Rescue, RescueFailed, WorkflowRescue, 20 * time.Minute},
	Unrescuing:    {Deployed, UnrescueFailed, WorkflowUnrescue, 5 * time.Minute},
	Releasing:     {Ready, ReleaseFailed, WorkflowRelease, 5 * time.Minute},
}

func TestEveryStateVerbPair(t *testing.T) {
	t.Parallel()
	if len(allowed) != len(States()) {
		t.Fatalf("expectations cover %d states, the package has %d", len(allowed), len(States()))
	}
	for _, from := range States() {
		for _, verb := range Verbs() {
			want, ok := allowed[from][verb]
			name := string(from) + "/" + string(verb)
			got, err := Move(from, verb)
			if !ok {
				var me *MoveError
				if !errors.As(err, &me) || !errors.Is(err, ErrInvalidMove) {
					t.Errorf("%s: want a MoveError, got %+v, %v", name, got, err)
					continue
				}
				if me.State != from || me.Verb != verb {
					t.Errorf("%s: error names %s/%s", name, me.State, me.Verb)
				}
				continue
			}
			if err != nil {
				t.Errorf("%s: want allowed into %s, got %v", name, want, err)
				continue
			}
			wantT := Transition{From: from, Verb: verb, To: want}
			switch {
			case verb == Abort:
				// Abort records the failure state and runs nothing.
			case verb == Retire:
				wantT.Workflow = WorkflowRetire
			default:
				tr, isT := transient[want]
				if !isT {
					t.Errorf("%s: %s lands on %s, which is not transient", name, verb, want)
					continue
				}
				wantT.OnSuccess, wantT.OnFailure = tr.success, tr.failure
				wantT.Workflow, wantT.Deadline = tr.workflow, tr.deadline
			}
			if diff := cmp.Diff(wantT, got); diff != "" {
				t.Errorf("%s: transition (-want +got):\n%s", name, diff)
			}
		}
	}
}

func TestTransientStates(t *testing.T) {
	t.Parallel()
	for _, s := range States() {
		tr, isT := transient[s]
		if IsTransient(s) != isT || IsResting(s) == isT {
			t.Errorf("%s: IsTransient=%v IsResting=%v, want transient=%v", s, IsTransient(s), IsResting(s), isT)
		}
		succ, errS := Complete(s)
		fail, errF := Fail(s)
		if !isT {
			if !errors.Is(errS, ErrInvalidMove) || !errors.Is(errF, ErrInvalidMove) {
				t.Errorf("%s: Complete/Fail on a resting state: %v, %v", s, errS, errF)
			}
			if WorkflowOf(s) != WorkflowNone || Deadline(s) != 0 {
				t.Errorf("%s: resting state has workflow %q deadline %v", s, WorkflowOf(s), Deadline(s))
			}
			continue
		}
		if succ != tr.success || fail != tr.failure || errS != nil || errF != nil {
			t.Errorf("%s: Complete=%s,%v Fail=%s,%v want %s/%s", s, succ, errS, fail, errF, tr.success, tr.failure)
		}
		if WorkflowOf(s) != tr.workflow || Deadline(s) != tr.deadline {
			t.Errorf("%s: workflow %q deadline %v", s, WorkflowOf(s), Deadline(s))
		}
		if !IsFailure(tr.failure) || IsFailure(tr.success) {
			t.Errorf("%s: IsFailure wrong for %s/%s", s, tr.failure, tr.success)
		}
		if !IsResting(tr.success) || !IsResting(tr.failure) {
			t.Errorf("%s: success and failure states must be resting", s)
		}
	}
	if len(transient) != 6 {
		t.Fatalf("expected 6 transient states, have %d", len(transient))
	}
}

func TestExpired(t *testing.T) {
	t.Parallel()
	entered := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		reason  string
		state   State
		elapsed time.Duration
		want    bool
	}{
		{"deploying within its 40 minutes", Deploying, 39*time.Minute + 59*time.Second, false},
		{"deploying at exactly its deadline", Deploying, 40 * time.Minute, true},
		{"commissioning past 20 minutes", Commissioning, 21 * time.Minute, true},
		{"releasing past 5 minutes", Releasing, 5*time.Minute + time.Second, true},
		{"releasing within 5 minutes", Releasing, 4 * time.Minute, false},
		{"inspecting within 20 minutes", Inspecting, 19 * time.Minute, false},
		{"rescuing past 20 minutes", Rescuing, 20*time.Minute + 1, true},
		{"unrescuing past 5 minutes", Unrescuing, 6 * time.Minute, true},
		{"a resting state never expires", Deployed, 1000 * time.Hour, false},
		{"a failure state never expires", DeployFailed, 1000 * time.Hour, false},
		{"a clock behind the entry time is not expiry", Deploying, -time.Hour, false},
	} {
		if got := Expired(tc.state, entered, entered.Add(tc.elapsed)); got != tc.want {
			t.Errorf("%s: Expired = %v, want %v", tc.reason, got, tc.want)
		}
	}
}

func TestUnknownInputs(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		reason string
		state  State
		verb   Verb
		want   error
	}{
		{"unknown state", "provisioning", Deploy, ErrUnknownState},
		{"empty state", "", Deploy, ErrUnknownState},
		{"unknown verb", Ready, "reboot", ErrUnknownVerb},
		{"empty verb", Ready, "", ErrUnknownVerb},
	} {
		_, err := Move(tc.state, tc.verb)
		if !errors.Is(err, tc.want) || errors.Is(err, ErrInvalidMove) {
			t.Errorf("%s: Move error = %v, want %v", tc.reason, err, tc.want)
		}
	}
	for _, s := range States() {
		if p, err := ParseState(string(s)); err != nil || p != s {
			t.Errorf("ParseState(%s) = %s, %v", s, p, err)
		}
	}
	for _, v := range Verbs() {
		if p, err := ParseVerb(string(v)); err != nil || p != v {
			t.Errorf("ParseVerb(%s) = %s, %v", v, p, err)
		}
	}
	if _, err := ParseState("Ready"); !errors.Is(err, ErrUnknownState) {
		t.Errorf("ParseState is case sensitive: %v", err)
	}
	if _, err := ParseVerb("nuke"); !errors.Is(err, ErrUnknownVerb) {
		t.Errorf("ParseVerb(nuke): %v", err)
	}
	if IsResting("nonsense") || IsTerminal("nonsense") {
		t.Error("an unknown state is neither resting nor terminal")
	}
}

func TestDerivedViews(t *testing.T) {
	t.Parallel()
	if diff := cmp.Diff([]Verb{Inspect, Commission, Deploy, Retire}, Allowed(Ready)); diff != "" {
		t.Errorf("Allowed(ready) (-want +got):\n%s", diff)
	}
	if got := Allowed(Retired); len(got) != 0 {
		t.Errorf("Allowed(retired) = %v", got)
	}
	for _, s := range States() {
		if IsTerminal(s) != (s == Retired) {
			t.Errorf("IsTerminal(%s) = %v", s, IsTerminal(s))
		}
	}
	err := error(&MoveError{State: Deployed, Verb: Retire})
	if err.Error() != "metal: cannot retire a node that is deployed" {
		t.Errorf("message: %q", err)
	}
	// Every workflow is reachable from some move, and every state from enrolled.
	seen := map[Workflow]bool{}
	reach := map[State]bool{Enrolled: true}
	for changed := true; changed; {
		changed = false
		for _, s := range States() {
			if !reach[s] {
				continue
			}
			next := []State{}
			for _, v := range Verbs() {
				if tr, err := Move(s, v); err == nil {
					seen[tr.Workflow] = true
					next = append(next, tr.To, tr.OnSuccess, tr.OnFailure)
				}
			}
			for _, n := range next {
				if n != "" && !reach[n] {
					reach[n], changed = true, true
				}
			}
		}
	}
	for _, w := range Workflows() {
		if !seen[w] {
			t.Errorf("workflow %s is never run", w)
		}
	}
	for _, s := range States() {
		if !reach[s] {
			t.Errorf("state %s is unreachable from enrolled", s)
		}
	}
}
