package bmc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"better-compute.dev/compute/metal"
	"better-compute.dev/compute/netguard"
)

// plans are the steps of each workflow, after the power state has been read. Commissioning's
// hardware tests are simulated by an inventory read; the image write of a deploy happens in
// the booted installer, outside the BMC, between its PXE boot and the switch to disk.
var plans = map[metal.Workflow][]Step{
	metal.WorkflowInspect:    {StepPowerOn, StepBootPXE, StepReboot, StepInventory, StepPowerOff},
	metal.WorkflowCommission: {StepBootPXE, StepReboot, StepInventory, StepPowerOff},
	metal.WorkflowDeploy:     {StepBootPXE, StepReboot, StepBootDisk},
	metal.WorkflowRescue:     {StepBootPXE, StepReboot},
	metal.WorkflowUnrescue:   {StepBootDisk, StepReboot},
	metal.WorkflowRelease:    {StepPowerOff, StepBootDisk},
	metal.WorkflowRetire:     {StepPowerOff},
}

// Plan returns the steps Run takes for a workflow after reading the power state (nil for
// WorkflowNone or an unknown workflow).
func Plan(w metal.Workflow) []Step { return slices.Clone(plans[w]) }

// needsKnownPower: steps that must not run unless the power state read as on or off.
func needsKnownPower(step Step) bool { return step == StepPowerOn || step == StepReboot }

// DefaultStepTimeout bounds each BMC call (login included) when Runner.StepTimeout is zero.
const DefaultStepTimeout = 2 * time.Minute

// DefaultPowerSettle bounds how long a run waits, after each power change the BMC accepted,
// for the BMC to report the requested state (Runner.PowerSettle, BC_METAL_POWER_SETTLE). Real
// BMCs apply a change seconds after accepting it (docs/benchmarks.md, "BMC power changes");
// until then they report the old state.
const DefaultPowerSettle = time.Minute

// DefaultPowerPoll is how often a run reads the power while it waits for a change to settle.
const DefaultPowerPoll = time.Second

// DefaultCheckInterval is how often a run asks its Check while it goes on, besides before every
// request (Runner.CheckInterval).
const DefaultCheckInterval = 250 * time.Millisecond

// DefaultRequestTimeout bounds each request to the BMC on its own (connect, TLS handshake and
// the answer's headers; one ipmitool command) when Runner.RequestTimeout is zero. A BMC that
// accepts connections and never answers fails a run after one request timeout.
const DefaultRequestTimeout = 20 * time.Second

// Runner executes workflows. The zero value works; it holds no per-node state and is safe for
// concurrent use (each Run builds its own bmclib client).
type Runner struct {
	// Logger receives one record per step and per outcome, with the target's address and
	// never its credential. Nil discards.
	Logger *slog.Logger
	// StepTimeout bounds each BMC call; zero means DefaultStepTimeout. The whole run is bounded
	// by ctx (the reconciler gives it what is left of the state's deadline).
	StepTimeout time.Duration
	// Outbound decides which addresses a BMC connection may reach. A BMC address is named by a
	// tenant, so the zero value refuses loopback, link-local (metadata services), unspecified
	// and the replica's own addresses; dev mode and tests allow loopback through it.
	Outbound netguard.Policy
	// RequestTimeout bounds each request (default DefaultRequestTimeout, at most StepTimeout).
	RequestTimeout time.Duration
	// IPMICipherSuite is the one RMCP+ cipher suite IPMI logs in with (default
	// DefaultIPMICipherSuite). A refused login is never retried with another.
	IPMICipherSuite string
	// IPMITool is the ipmitool binary (default: "ipmitool" on PATH).
	IPMITool string
	// PowerSettle bounds the wait after each power change for the BMC to report the requested
	// state (default DefaultPowerSettle); a change that never shows fails the step
	// (ErrNotSettled). PowerPoll is how often the power is read meanwhile (default
	// DefaultPowerPoll, at most PowerSettle).
	PowerSettle, PowerPoll time.Duration
	// CheckInterval is how often RunChecked asks its Check while the run goes on, so a request
	// in flight (an ipmitool command) is stopped when the node moves (default
	// DefaultCheckInterval).
	CheckInterval time.Duration
}

func (r *Runner) settleBounds() (bound, poll time.Duration) {
	bound, poll = DefaultPowerSettle, DefaultPowerPoll
	if r.PowerSettle > 0 {
		bound = r.PowerSettle
	}
	if r.PowerPoll > 0 {
		poll = r.PowerPoll
	}
	return bound, min(poll, bound)
}

func (r *Runner) checkInterval() time.Duration {
	if r.CheckInterval > 0 {
		return r.CheckInterval
	}
	return DefaultCheckInterval
}

// guard resolves t's address through the outbound policy before anything is sent. An IPMI
// target is then dialed by the checked address itself (ipmitool resolves on its own, so a name
// could resolve differently a moment later); a Redfish target keeps its name for TLS and is
// checked again at connect time by the policy's dialer.
func (r *Runner) guard(ctx context.Context, t Target) (Target, error) {
	addrs, err := r.Outbound.Resolve(ctx, t.Address)
	if err != nil {
		// The message names the policy's reason, never what answered at the address.
		return t, &Error{Step: StepOpen, Kind: ErrInvalidTarget, msg: "bmc address refused: " + err.Error()}
	}
	if t.Protocol == IPMI {
		t.Address = addrs[0].String()
	}
	return t, nil
}

func (r *Runner) logger() *slog.Logger {
	if r.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return r.Logger
}

func (r *Runner) timeouts() timeouts {
	t := timeouts{step: DefaultStepTimeout, request: DefaultRequestTimeout}
	if r.StepTimeout > 0 {
		t.step = r.StepTimeout
	}
	if r.RequestTimeout > 0 {
		t.request = r.RequestTimeout
	}
	t.request = min(t.request, t.step)
	return t
}

// open connects to t through the run's gate.
func (r *Runner) open(ctx context.Context, t Target, g *gate, scrub scrubber, rep *Report) (conn, error) {
	if t.Protocol == IPMI {
		if t.Driver != "" && t.Driver != DriverIpmitool {
			return nil, fmt.Errorf("no driver %q for protocol %q: %w", t.Driver, t.Protocol, errNoDriver)
		}
		return openIPMI(ctx, t, r.IPMITool, r.IPMICipherSuite, r.timeouts().request, g, scrub, rep)
	}
	return openRedfish(ctx, t, r.timeouts(), g, scrub, rep)
}

// Run executes the workflow of a transient state against t. It returns the report of what
// was done even when it fails; the error is an *Error (classified, scrubbed). WorkflowNone
// does nothing and succeeds. Nothing is sent to the BMC once ctx ends, nor after Run returns.
func (r *Runner) Run(ctx context.Context, t Target, w metal.Workflow) (Report, error) {
	return r.RunChecked(ctx, t, w, nil)
}

// RunChecked is Run asking check before every request it sends (see Check): the first error
// stops the run before that request, with ErrStopped.
func (r *Runner) RunChecked(ctx context.Context, t Target, w metal.Workflow, check Check) (Report, error) {
	return r.RunWith(ctx, t, w, RunOptions{Check: check})
}

// RunOptions are what one run asks of its caller besides the target.
type RunOptions struct {
	// Check is asked before every request and every CheckInterval (see Check).
	Check Check
	// Settling is told when the BMC has accepted a power change and the run starts waiting for
	// it to show: the state asked for, and the last reading with its time (the BMC's, before
	// the change applied). The metal reconciler shows it on the node while the change settles.
	// It runs on the run's goroutine, between BMC requests.
	Settling func(ctx context.Context, requested, reading PowerState, readAt time.Time)
}

// RunWith is Run with options.
func (r *Runner) RunWith(ctx context.Context, t Target, w metal.Workflow, o RunOptions) (Report, error) {
	check := o.Check
	rep := Report{Workflow: w, Target: t.String(), settling: o.Settling}
	if w == metal.WorkflowNone {
		return rep, nil
	}
	plan, ok := plans[w]
	if !ok {
		return rep, r.fail(ctx, t, &rep, &Error{Step: StepOpen, Kind: ErrUnsupported, msg: fmt.Sprintf("unknown workflow %q", w)})
	}
	scrub := newScrubber(t.Username, t.Password)
	if err := t.Validate(); err != nil {
		return rep, r.fail(ctx, t, &rep, &Error{Step: StepOpen, Kind: ErrInvalidTarget, msg: scrub.clean(err.Error())})
	}
	t, err := r.guard(ctx, t)
	if err != nil {
		return rep, r.fail(ctx, t, &rep, err.(*Error))
	}
	g, ctx := newGate(ctx, r.Outbound, check, r.checkInterval())
	defer g.close()
	log := r.logger().With(slog.Any("bmc", t), slog.String("workflow", string(w)))
	log.LogAttrs(ctx, slog.LevelInfo, "bmc workflow started")

	sess, err := r.open(ctx, t, g, scrub, &rep)
	if err != nil {
		return rep, r.fail(ctx, t, &rep, r.classified(StepOpen, err, scrub))
	}
	defer sess.close(ctx)
	rep.done(StepOpen, "")

	power, err := readPower(ctx, sess, &rep)
	if err != nil {
		return rep, r.fail(ctx, t, &rep, r.classified(StepPowerState, err, scrub))
	}
	rep.PowerBefore = power
	rep.done(StepPowerState, string(power))
	if err := checkPower(StepPowerState, power, slices.ContainsFunc(plan, needsKnownPower)); err != nil {
		return rep, r.fail(ctx, t, &rep, err)
	}

	for _, step := range plan {
		if err := g.allow(ctx); err != nil {
			// Stopped between steps (an abort): not even the next step's first request goes out.
			return rep, r.fail(ctx, t, &rep, r.classified(step, err, scrub))
		}
		detail, err := r.step(ctx, sess, t, step, &power, &rep)
		if err != nil {
			return rep, r.fail(ctx, t, &rep, r.classified(step, err, scrub))
		}
		rep.done(step, detail)
		log.LogAttrs(ctx, slog.LevelDebug, "bmc step done", slog.String("step", string(step)),
			slog.String("detail", detail), slog.String("provider", rep.Provider))
	}
	if after, err := readPower(ctx, sess, &rep); err == nil {
		rep.PowerAfter = after
	}
	log.LogAttrs(ctx, slog.LevelInfo, "bmc workflow finished", slog.String("provider", rep.Provider),
		slog.String("powerAfter", string(rep.PowerAfter)))
	return rep, nil
}

// readPower reads the BMC's power and notes the reading and its time in the report.
func readPower(ctx context.Context, s conn, rep *Report) (PowerState, error) {
	p, err := s.powerState(ctx)
	if err != nil {
		return PowerUnknown, err
	}
	rep.PowerLast, rep.PowerReadAt = p, time.Now().UTC()
	return p, nil
}

// setPower sends a power action and waits until the BMC reports want: a BMC accepts a change
// and applies it seconds later, reporting the old state meanwhile, so the next step (a boot
// override, a cycle, a power-off) must not act on that reading. A change that does not show
// within PowerSettle fails the step (ErrNotSettled, permanent): the machine is not in the state
// the workflow needs, and the node records the requested state beside the reading.
func (r *Runner) setPower(ctx context.Context, s conn, step Step, action string, want PowerState, rep *Report) error {
	if err := s.setPower(ctx, action); err != nil {
		return err
	}
	rep.PowerRequested = want
	if rep.settling != nil {
		rep.settling(ctx, want, rep.PowerLast, rep.PowerReadAt)
	}
	bound, poll := r.settleBounds()
	deadline := time.Now().Add(bound)
	for {
		p, err := readPower(ctx, s, rep)
		if err != nil {
			return err
		}
		if p == want {
			rep.PowerRequested = ""
			return nil
		}
		if !time.Now().Before(deadline) {
			return &Error{Step: step, Kind: ErrNotSettled, msg: fmt.Sprintf(
				"power %s was accepted but the BMC still reports %s, not %s, after %s", action, p, want, bound)}
		}
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-time.After(poll):
		}
	}
}

// step runs one step; power is the BMC's last reading in this run, taken after the previous
// power change settled (a reading from before a change applied is never acted on).
func (r *Runner) step(ctx context.Context, s conn, t Target, step Step, power *PowerState, rep *Report) (string, error) {
	efi := !t.LegacyBoot
	mode := "uefi"
	if !efi {
		mode = "legacy"
	}
	switch step {
	case StepPowerOn:
		if *power == PowerOn {
			return "already on", nil
		}
		if err := r.setPower(ctx, s, step, "on", PowerOn, rep); err != nil {
			return "", err
		}
		*power = PowerOn
		return "on", nil
	case StepPowerOff:
		if *power == PowerOff {
			return "already off", nil
		}
		if err := r.setPower(ctx, s, step, "off", PowerOff, rep); err != nil {
			return "", err
		}
		*power = PowerOff
		return "off", nil
	case StepReboot:
		// Read again: the machine may have changed since the run began. A running machine is
		// powered off and on, each change waited for, rather than cycled: a BMC that applies a
		// restart late reports "on" before and after it, so a cycle could not be seen to happen,
		// and the next step (a disk override after a PXE boot) would land before the restart.
		p, err := readPower(ctx, s, rep)
		if err != nil {
			return "", err
		}
		if err := checkPower(step, p, true); err != nil {
			return "", err
		}
		detail := "on"
		if p == PowerOn {
			if err := r.setPower(ctx, s, step, "off", PowerOff, rep); err != nil {
				return "", err
			}
			detail = "off, on"
		}
		if err := r.setPower(ctx, s, step, "on", PowerOn, rep); err != nil {
			return "", err
		}
		*power = PowerOn
		return detail, nil
	case StepBootPXE:
		return "pxe once " + mode, s.setBoot(ctx, "pxe", false, efi)
	case StepBootDisk:
		return "disk persistent " + mode, s.setBoot(ctx, "disk", true, efi)
	case StepInventory:
		inv, err := s.inventory(ctx)
		if err != nil {
			return "", err
		}
		rep.Inventory = inv
		return fmt.Sprintf("%d cpus, %d dimms", rep.Inventory.CPUs, rep.Inventory.DIMMs), nil
	}
	return "", &Error{Step: step, Kind: ErrUnsupported, msg: "unknown step"}
}

// checkPower refuses to go on when the power state is not on or off and the plan would power
// the machine on or cycle it: a transition in progress is retryable, anything else is not.
func checkPower(step Step, p PowerState, needKnown bool) *Error {
	if !needKnown || p == PowerOn || p == PowerOff {
		return nil
	}
	if p == PowerTransitioning {
		return &Error{Step: step, Kind: ErrBusy, Retryable: true, msg: "power state is changing; not powering on or cycling"}
	}
	return &Error{Step: step, Kind: ErrPowerUnknown, msg: "power state unknown; not powering on or cycling"}
}

func (r *Runner) classified(step Step, err error, scrub scrubber) *Error {
	var e *Error
	if errors.As(err, &e) {
		if e.Step == "" {
			c := *e
			c.Step = step
			return &c
		}
		return e
	}
	var inc *errIncomplete
	switch {
	case errors.Is(err, ErrStopped):
		return &Error{Step: step, Kind: ErrStopped, Retryable: true, msg: scrub.clean(err.Error())}
	case errors.As(err, &inc):
		return &Error{Step: step, Kind: ErrInventory, msg: scrub.clean(inc.msg)}
	}
	if errors.Is(err, ErrInvalidTarget) {
		return &Error{Step: step, Kind: ErrInvalidTarget, msg: scrub.clean(err.Error())}
	}
	if errors.Is(err, errNoDriver) {
		return &Error{Step: step, Kind: ErrUnsupported, msg: scrub.clean(err.Error())}
	}
	e = newError(step, err, scrub)
	if step == StepInventory && e.Kind == ErrUnclassified {
		// An answer the inventory walk could not understand is an inventory that cannot be read.
		e.Kind = ErrInventory
	}
	return e
}

// fail records the failed step in the report and logs the scrubbed error.
func (r *Runner) fail(ctx context.Context, t Target, rep *Report, e *Error) *Error {
	rep.FailedStep = e.Step
	r.logger().LogAttrs(ctx, slog.LevelWarn, "bmc workflow failed", slog.Any("bmc", t),
		slog.String("workflow", string(rep.Workflow)), slog.String("step", string(e.Step)),
		slog.Bool("retryable", e.Retryable), slog.String("error", e.Error()))
	return e
}

// Probe logs in, reads the power state and logs out: the check that an enrolled node's BMC
// address and credentials work, and the periodic power sync. An unknown power state is
// reported, not an error.
func (r *Runner) Probe(ctx context.Context, t Target) (Report, error) {
	rep := Report{Target: t.String()}
	scrub := newScrubber(t.Username, t.Password)
	if err := t.Validate(); err != nil {
		return rep, r.fail(ctx, t, &rep, &Error{Step: StepOpen, Kind: ErrInvalidTarget, msg: scrub.clean(err.Error())})
	}
	t, err := r.guard(ctx, t)
	if err != nil {
		return rep, r.fail(ctx, t, &rep, err.(*Error))
	}
	g, ctx := newGate(ctx, r.Outbound, nil, 0)
	defer g.close()
	sess, err := r.open(ctx, t, g, scrub, &rep)
	if err != nil {
		return rep, r.fail(ctx, t, &rep, r.classified(StepOpen, err, scrub))
	}
	defer sess.close(ctx)
	rep.done(StepOpen, "")
	power, err := readPower(ctx, sess, &rep)
	if err != nil {
		return rep, r.fail(ctx, t, &rep, r.classified(StepPowerState, err, scrub))
	}
	rep.PowerBefore, rep.PowerAfter = power, power
	rep.done(StepPowerState, string(power))
	return rep, nil
}
