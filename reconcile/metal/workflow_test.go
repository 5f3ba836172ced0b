package metal_test

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"better-compute.dev/compute/contract"
	v1 "better-compute.dev/compute/gen/go/bettercompute/compute/v1"
	"better-compute.dev/compute/lifecycle"
	"better-compute.dev/compute/metal"
	"better-compute.dev/compute/provider/bmc/redfishsim"
	metalrec "better-compute.dev/compute/reconcile/metal"
	"better-compute.dev/compute/reconcile/reconciletest"
	"better-compute.dev/compute/store"
)

func TestKindAndEventMatchTheAPI(t *testing.T) {
	t.Parallel()
	if metalrec.Kind != contract.MetalKind || metalrec.EventMoved != lifecycle.EventMetalMoved {
		t.Fatalf("kind %q / event %q differ from the API's %q / %q",
			metalrec.Kind, metalrec.EventMoved, contract.MetalKind, lifecycle.EventMetalMoved)
	}
}

func verb(e *env, v metal.Verb, id string) (*v1.MetalNode, error) {
	switch v {
	case metal.Inspect:
		return e.svc.Metal.InspectNode(e.editor, &v1.InspectNodeRequest{TenantId: e.tenant, NodeId: id})
	case metal.Commission:
		return e.svc.Metal.CommissionNode(e.editor, &v1.CommissionNodeRequest{TenantId: e.tenant, NodeId: id})
	case metal.Deploy:
		return e.svc.Metal.DeployNode(e.editor, &v1.DeployNodeRequest{TenantId: e.tenant, NodeId: id, Image: "debian-13"})
	case metal.RescueVerb:
		return e.svc.Metal.RescueNode(e.editor, &v1.RescueNodeRequest{TenantId: e.tenant, NodeId: id})
	case metal.Unrescue:
		return e.svc.Metal.UnrescueNode(e.editor, &v1.UnrescueNodeRequest{TenantId: e.tenant, NodeId: id})
	case metal.Release:
		return e.svc.Metal.ReleaseNode(e.editor, &v1.ReleaseNodeRequest{TenantId: e.tenant, NodeId: id})
	case metal.Retire:
		return e.svc.Metal.RetireNode(e.editor, &v1.RetireNodeRequest{TenantId: e.tenant, NodeId: id})
	}
	return e.svc.Metal.AbortNode(e.editor, &v1.AbortNodeRequest{TenantId: e.tenant, NodeId: id})
}

// TestLifecycleAgainstSimulator drives one machine through every workflow via the API and the
// reconciler, checking the exact power and boot requests the BMC accepted at each step and the
// state each one ends in.
func TestLifecycleAgainstSimulator(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	r := e.runner(t, envOptions{})
	ctx := testCtx(t)
	node := e.enroll(t, simPassword)
	for _, step := range []struct {
		reason  string
		verb    metal.Verb // empty: the enrollment's probe
		powerOn bool       // someone powered the machine on before the verb
		actions []string
		state   metal.State
		power   string
	}{
		{"enrollment probes the BMC and changes nothing", "", false, nil, metal.Enrolled, "off"},
		{"inspect: on, PXE once, cycle, inventory, off", metal.Inspect, false,
			[]string{"reset On", "boot Pxe Once UEFI", "reset ForceOff", "reset On", "reset ForceOff"}, metal.Inspected, "off"},
		{"commission: PXE once, on, tests, off", metal.Commission, false,
			[]string{"boot Pxe Once UEFI", "reset On", "reset ForceOff"}, metal.Ready, "off"},
		{"deploy: PXE once, on, then disk persistently", metal.Deploy, false,
			[]string{"boot Pxe Once UEFI", "reset On", "boot Hdd Continuous UEFI"}, metal.Deployed, "on"},
		{"rescue: PXE once and cycle", metal.RescueVerb, false,
			[]string{"boot Pxe Once UEFI", "reset ForceOff", "reset On"}, metal.Rescue, "on"},
		{"unrescue: disk persistently and cycle", metal.Unrescue, false,
			[]string{"boot Hdd Continuous UEFI", "reset ForceOff", "reset On"}, metal.Deployed, "on"},
		{"release: hard off, PXE off", metal.Release, false,
			[]string{"reset ForceOff", "boot Hdd Continuous UEFI"}, metal.Ready, "off"},
		{"retire powers off a machine someone turned on", metal.Retire, true,
			[]string{"reset ForceOff"}, metal.Retired, "off"},
	} {
		e.sim.ResetLog()
		if step.powerOn {
			e.sim.SetPowerState(redfishsim.PowerOn)
		}
		if step.verb != "" {
			got, err := verb(e, step.verb, node.GetId())
			if err != nil {
				t.Fatalf("%s: %v", step.reason, err)
			}
			if tr, _ := metal.Move(metal.State(node.GetState()), step.verb); got.GetState() != string(tr.To) {
				t.Fatalf("%s: the verb recorded %s, want %s", step.reason, got.GetState(), tr.To)
			}
		}
		if n := reconciletest.Drain(t, ctx, r); n == 0 {
			t.Fatalf("%s: the reconciler found nothing to do", step.reason)
		}
		if diff := cmp.Diff(step.actions, e.sim.Actions()); diff != "" {
			t.Errorf("%s: BMC actions (-want +got):\n%s", step.reason, diff)
		}
		node = e.get(t, node.GetId())
		if node.GetState() != string(step.state) || node.GetPowerState() != step.power {
			t.Errorf("%s: node %s power %q, want %s %q", step.reason, node.GetState(), node.GetPowerState(), step.state, step.power)
		}
		if node.GetLastError() != "" || node.GetFailureReason() != "" || node.GetLastAnswer() == "" {
			t.Errorf("%s: error %q reason %q answer %q", step.reason, node.GetLastError(), node.GetFailureReason(), node.GetLastAnswer())
		}
		if n := e.sim.SessionCount(); n != 0 {
			t.Errorf("%s: %d BMC sessions left open", step.reason, n)
		}
		if w := e.workItem(t, node.GetId()); w.DueAt != nil || w.Attempts != 0 {
			t.Errorf("%s: work item still due: %+v", step.reason, w)
		}
		switch step.verb {
		case metal.Inspect:
			want := &v1.MetalInventory{Vendor: "Better Compute Labs", Model: "BC-1000", Serial: "SIM0001",
				CpuModel: "Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz", Cpus: 2, CpuCores: 32, CpuThreads: 64,
				MemoryBytes: 4 * 32768 << 20, Dimms: 4, Nics: 1, Drives: 2, BiosVersion: "2.4.1", BmcFirmware: "1.12.0"}
			if diff := cmp.Diff(want.String(), node.GetInventory().String()); diff != "" {
				t.Errorf("inventory (-want +got):\n%s", diff)
			}
		case metal.Deploy:
			if node.GetImage() != "debian-13" {
				t.Errorf("deployed image %q", node.GetImage())
			}
		case metal.Release:
			if node.GetImage() != "" {
				t.Errorf("a released node keeps image %q", node.GetImage())
			}
		}
	}
	evs, err := store.ListEvents(ctx, e.db.Q(), e.tenant, 0, 1000, node.GetId())
	if err != nil {
		t.Fatal(err)
	}
	var outcomes []string
	for _, ev := range evs {
		if ev.Data["outcome"] != nil {
			outcomes = append(outcomes, ev.Data["to"].(string))
		}
	}
	if diff := cmp.Diff([]string{"inspected", "ready", "deployed", "rescue", "deployed", "ready"}, outcomes); diff != "" {
		t.Errorf("reconciler events (-want +got):\n%s", diff)
	}
}

// TestBMCFailures: retryable failures are retried with backoff and then recorded as the
// failure state with the reason; a permanent one fails at once; a recovered BMC succeeds.
func TestBMCFailures(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		reason   string
		fault    func(*redfishsim.Server)
		attempts int // runs of the reconciler, each after the backoff
		state    metal.State
		// failure: substrings of the failure reason ("" for none)
		failure []string
	}{
		{"a BMC answering 503 forever is retried, then failed", func(s *redfishsim.Server) {
			s.InjectFault(redfishsim.Fault{Status: 503, Count: -1})
		}, 3, metal.InspectFailed, []string{"gave up after 3 attempts", "open"}},
		{"a BMC failing 500 twice recovers on the third attempt", func(s *redfishsim.Server) { s.FailNext(2, 500) },
			3, metal.Inspected, nil},
		{"refused credentials fail at once", func(s *redfishsim.Server) { s.RejectCredentials(true) },
			1, metal.InspectFailed, []string{"credentials refused"}},
		{"a power action the BMC refuses as unsupported fails at once", func(s *redfishsim.Server) {
			s.InjectFault(redfishsim.Fault{Method: "POST", Path: "/redfish/v1/Systems/1/Actions", Status: 400, Count: -1})
		}, 1, metal.InspectFailed, []string{"power-on"}},
	} {
		t.Run(tc.reason, func(t *testing.T) {
			t.Parallel()
			o := envOptions{reconcilerO: metalrec.Options{MaxAttempts: 3}}
			e := newEnv(t, o)
			r := e.runner(t, o)
			ctx := testCtx(t)
			node := e.enroll(t, simPassword)
			reconciletest.Drain(t, ctx, r) // the probe
			tc.fault(e.sim)
			if _, err := verb(e, metal.Inspect, node.GetId()); err != nil {
				t.Fatal(err)
			}
			for i := 1; i <= tc.attempts; i++ {
				if n := reconciletest.Drain(t, ctx, r); n != 1 {
					t.Fatalf("attempt %d: %d items ran", i, n)
				}
				got := e.get(t, node.GetId())
				if i < tc.attempts {
					// Between attempts the node stays in its transient state with the error shown.
					w := e.workItem(t, node.GetId())
					if got.GetState() != "inspecting" || got.GetLastError() == "" || w.Attempts != i || w.DueAt == nil {
						t.Fatalf("after attempt %d: %s error %q, work item %+v", i, got.GetState(), got.GetLastError(), w)
					}
				}
				e.clock.Advance(2 * time.Second)
			}
			if n := reconciletest.Drain(t, ctx, r); n != 0 {
				t.Errorf("%d more runs after the outcome was recorded", n)
			}
			got := e.get(t, node.GetId())
			if got.GetState() != string(tc.state) {
				t.Fatalf("state %s, want %s (reason %q, error %q)", got.GetState(), tc.state, got.GetFailureReason(), got.GetLastError())
			}
			for _, want := range tc.failure {
				if !strings.Contains(got.GetFailureReason(), want) {
					t.Errorf("failure reason %q lacks %q", got.GetFailureReason(), want)
				}
			}
			if tc.failure == nil && (got.GetFailureReason() != "" || got.GetLastError() != "") {
				t.Errorf("a success keeps reason %q error %q", got.GetFailureReason(), got.GetLastError())
			}
			if tc.failure != nil && (got.GetLastAnswer() == "" || got.GetLastError() == "") {
				t.Errorf("failure state without the BMC's last answer %q or error %q", got.GetLastAnswer(), got.GetLastError())
			}
			if tc.failure != nil && !strings.Contains(strings.Join(got.GetAllowedVerbs(), ","), "inspect") {
				t.Errorf("inspect-failed must allow inspect again: %v", got.GetAllowedVerbs())
			}
		})
	}
}

// TestDeadlines: a transient state past its deadline fails without touching the BMC, also when
// the replica that was driving it died.
func TestDeadlines(t *testing.T) {
	t.Parallel()
	late := func() time.Time { return time.Now().Add(time.Hour) }
	o := envOptions{reconcilerO: metalrec.Options{Now: late}}
	e := newEnv(t, o)
	ctx := testCtx(t)
	node := e.enroll(t, simPassword)
	if _, err := e.db.Pool().Exec(ctx, `UPDATE metal_nodes SET pending_work = '' WHERE id = $1`, node.GetId()); err != nil {
		t.Fatal(err)
	}
	if _, err := verb(e, metal.Inspect, node.GetId()); err != nil {
		t.Fatal(err)
	}
	// A replica claims the item and dies holding it.
	if _, err := store.Claim(ctx, e.db, store.ClaimParams{Holder: "dead", Kinds: []string{metalrec.Kind}, Limit: 1,
		LeaseTTL: 5 * time.Second, Now: e.clock.Now()}); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(10 * time.Second)
	reconciletest.Drain(t, ctx, e.runner(t, o))
	got := e.get(t, node.GetId())
	if got.GetState() != "inspect-failed" || !strings.Contains(got.GetFailureReason(), "inspecting did not finish within 20m0s") {
		t.Errorf("state %s reason %q", got.GetState(), got.GetFailureReason())
	}
	if reqs := e.sim.Requests(); len(reqs) != 0 {
		t.Errorf("an expired state touched the BMC: %+v", reqs)
	}
}

// TestRestartRedrives: a replica that dies mid-workflow leaves the node transient; the next one
// claims it after the lease and drives the (idempotent) workflow again.
func TestRestartRedrives(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{power: redfishsim.PowerOn})
	ctx := testCtx(t)
	r := e.runner(t, envOptions{})
	node := e.enroll(t, simPassword)
	reconciletest.Drain(t, ctx, r)
	e.sim.ResetLog()
	if _, err := verb(e, metal.Inspect, node.GetId()); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Claim(ctx, e.db, store.ClaimParams{Holder: "dead", Kinds: []string{metalrec.Kind}, Limit: 1,
		LeaseTTL: 5 * time.Second, Now: e.clock.Now()}); err != nil {
		t.Fatal(err)
	}
	if n := reconciletest.Drain(t, ctx, r); n != 0 {
		t.Fatalf("a live lease was taken over: %d ran", n)
	}
	e.clock.Advance(10 * time.Second)
	if n := reconciletest.Drain(t, ctx, e.runner(t, envOptions{})); n != 1 {
		t.Fatalf("the restarted reconciler ran %d items", n)
	}
	got := e.get(t, node.GetId())
	want := []string{"boot Pxe Once UEFI", "reset ForceOff", "reset On", "reset ForceOff"}
	if got.GetState() != "inspected" || !cmp.Equal(want, e.sim.Actions()) {
		t.Errorf("state %s actions %v", got.GetState(), e.sim.Actions())
	}
}

// abortHook aborts the node the first time the BMC runner says a workflow started: a verb that
// lands while the workflow runs.
type abortHook struct {
	slog.Handler
	once  sync.Once
	abort func()
}

// Enabled lets every record through to Handle, whatever the wrapped handler wants.
func (h *abortHook) Enabled(context.Context, slog.Level) bool { return true }

func (h *abortHook) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == "bmc workflow started" {
		h.once.Do(h.abort)
	}
	return nil
}

// WithAttrs keeps the hook on derived loggers (the runner logs through With).
func (h *abortHook) WithAttrs([]slog.Attr) slog.Handler { return h }

// TestAbortWhileRunning: an abort recorded during the workflow wins; the workflow's outcome is
// discarded (the node's version moved).
func TestAbortWhileRunning(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	ctx := testCtx(t)
	var nodeID string
	hook := &abortHook{Handler: slog.DiscardHandler}
	hook.abort = func() {
		if _, err := verb(e, metal.Abort, nodeID); err != nil {
			t.Errorf("abort: %v", err)
		}
	}
	r := e.runner(t, envOptions{runnerHook: slog.New(hook)})
	node := e.enroll(t, simPassword)
	nodeID = node.GetId()
	if _, err := e.db.Pool().Exec(ctx, `UPDATE metal_nodes SET pending_work = '' WHERE id = $1`, nodeID); err != nil {
		t.Fatal(err)
	}
	if _, err := verb(e, metal.Inspect, nodeID); err != nil {
		t.Fatal(err)
	}
	reconciletest.Drain(t, ctx, r)
	got := e.get(t, nodeID)
	if got.GetState() != "inspect-failed" || got.GetFailureReason() != "aborted while inspecting" || got.GetInventory() != nil {
		t.Errorf("after abort: %s reason %q inventory %v", got.GetState(), got.GetFailureReason(), got.GetInventory())
	}
	// The abort landed before the first request: nothing reached the BMC.
	if got := e.sim.Requests(); len(got) != 0 {
		t.Errorf("requests after the abort: %+v", got)
	}
}

// TestAbortStopsTheBMC aborts a deploy while a slow BMC is busy answering its PXE boot
// override: the request on the wire finishes, and nothing at all (no restart, no disk override,
// no power read, not even a logout) arrives after the abort committed.
func TestAbortStopsTheBMC(t *testing.T) {
	t.Parallel()
	for _, w := range []struct {
		verb   metal.Verb
		from   string // state to start from
		method string // the request the BMC is busy with when the abort lands
		failed string
	}{
		{metal.Deploy, "ready", "PATCH", "deploy-failed"},
		{metal.Inspect, "enrolled", "POST", "inspect-failed"}, // the power-on reset action
		{metal.RescueVerb, "deployed", "PATCH", "rescue-failed"},
	} {
		t.Run(string(w.verb), func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, envOptions{})
			ctx := testCtx(t)
			r := e.runner(t, envOptions{})
			node := e.enroll(t, simPassword)
			if _, err := e.db.Pool().Exec(ctx, `UPDATE metal_nodes SET pending_work = '', state = $2 WHERE id = $1`, node.GetId(), w.from); err != nil {
				t.Fatal(err)
			}
			path := e.sim.SystemPath()
			if w.method == "POST" {
				path += "/Actions"
			}
			reached, release := e.sim.Hold(w.method, path)
			if _, err := verb(e, w.verb, node.GetId()); err != nil {
				t.Fatal(err)
			}
			done := make(chan struct{})
			go func() {
				defer close(done)
				for range 5 {
					if n, err := r.RunOnce(ctx); err != nil || n == 0 {
						return
					}
				}
			}()
			select {
			case <-reached:
			case <-done:
				t.Fatal("the workflow ended before the BMC was busy")
			}
			if _, err := verb(e, metal.Abort, node.GetId()); err != nil {
				t.Fatal(err)
			}
			abortedAt := time.Now()
			before := len(e.sim.Requests())
			release()
			<-done
			reqs := e.sim.Requests()
			for _, rq := range reqs {
				if rq.At.After(abortedAt) {
					t.Errorf("%s %s arrived after the abort", rq.Method, rq.Path)
				}
			}
			if len(reqs) != before+1 { // the held request is recorded once answered
				t.Errorf("%d requests after the abort, want only the held one to complete: %+v", len(reqs)-before, reqs[before:])
			}
			if got := e.get(t, node.GetId()); got.GetState() != w.failed {
				t.Errorf("state %s, want %s", got.GetState(), w.failed)
			}
		})
	}
}

// TestProbe: enrollment's probe records the power state; wrong credentials show as the last
// error without moving the node.
func TestProbe(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{power: redfishsim.PowerOn})
	ctx := testCtx(t)
	r := e.runner(t, envOptions{})
	node := e.enroll(t, "not-the-password")
	reconciletest.Drain(t, ctx, r)
	got := e.get(t, node.GetId())
	if got.GetState() != "enrolled" || !strings.Contains(got.GetLastError(), "credentials refused") || got.GetPowerState() != "" {
		t.Errorf("bad credentials: %s error %q power %q", got.GetState(), got.GetLastError(), got.GetPowerState())
	}
	if _, err := e.svc.Metal.UpdateNodeCredentials(e.editor, &v1.UpdateNodeCredentialsRequest{
		TenantId: e.tenant, NodeId: node.GetId(), Username: "operator", Password: simPassword,
	}); err != nil {
		t.Fatal(err)
	}
	reconciletest.Drain(t, ctx, r)
	got = e.get(t, node.GetId())
	if got.GetLastError() != "" || got.GetPowerState() != "on" || len(e.sim.Actions()) != 0 {
		t.Errorf("after new credentials: error %q power %q actions %v", got.GetLastError(), got.GetPowerState(), e.sim.Actions())
	}
}
