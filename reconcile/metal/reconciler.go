// Package metal is the metal reconciler: the reconcile.Handler of the "metal.nodes"
// work kind. For a node in a transient provision state it unseals the BMC credentials, runs the
// state's workflow at the BMC through provider/bmc, and records the outcome fenced twice: by the
// work item's lease (reconcile.WriteResult) and by the node's version, so an abort or another
// verb that landed while the workflow ran is never overwritten.
//
// Outcomes: success completes the state (metal.Complete); a retryable BMC failure is noted on
// the node and returned so the runner backs off, until MaxAttempts attempts have failed or the
// state's deadline has passed (metal.Expired), when the node fails into the state's failure
// state (metal.Fail) with the reason and the BMC's last answer; a permanent failure fails the
// node at once. A reconciler that restarts finds the transient state and drives it again (the
// workflows are idempotent), or fails it when its deadline passed meanwhile. Nodes in resting
// states get the work the API left them: a probe of the BMC after enrollment or a credential
// change, and retire's best-effort power-off.
package metal

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"better-compute.dev/compute/contract"
	"better-compute.dev/compute/metal"
	"better-compute.dev/compute/provider/bmc"
	"better-compute.dev/compute/reconcile"
	"better-compute.dev/compute/seal"
	"better-compute.dev/compute/store"
)

// Kind is the work-queue kind this reconciler handles; the API queues it with the node id as
// resource id.
const Kind = contract.MetalKind

// DefaultMaxAttempts is how many consecutive retryable failures a workflow may have before the
// node fails, unless the state's deadline comes first. With the runner's default backoff (1 s
// doubling) eight attempts span about two minutes: a BMC restarting itself comes back within
// that, a BMC that is gone does not.
const DefaultMaxAttempts = 8

// DefaultShare is the metal kind's share of a runner with concurrency slots (0: the runner's
// default): half of them, and one tenant at most half of those (each at least one). A BMC that
// accepts connections and never answers holds its slot for a request timeout (provider/bmc),
// and up to its step's retries after that; the share keeps such BMCs from holding the slots the
// other kinds (load balancers) and the other tenants' nodes need.
func DefaultShare(concurrency int) reconcile.Share {
	if concurrency <= 0 {
		concurrency = reconcile.DefaultConcurrency
	}
	slots := max(1, concurrency/2)
	return reconcile.Share{Slots: slots, PerGroup: max(1, slots/2)}
}

// Options configure a Reconciler. DB, Keyring and Runner are required.
type Options struct {
	DB      *store.DB
	Keyring *seal.Keyring
	Runner  *bmc.Runner
	// Logger receives one record per outcome, naming the node and never a credential. Nil
	// discards.
	Logger *slog.Logger
	// MaxAttempts bounds consecutive retryable failures (default DefaultMaxAttempts).
	MaxAttempts int
	// Now overrides the database clock the deadlines are measured on (tests); nil means the
	// database's now(), the clock state_entered_at is written with.
	Now func() time.Time
}

// Reconciler is the metal reconciler. It holds no per-node state and is safe for concurrent use.
type Reconciler struct{ opts Options }

var _ reconcile.Handler = (*Reconciler)(nil)

// New returns the metal reconciler with default options, to register under Kind.
func New(db *store.DB, ring *seal.Keyring, runner *bmc.Runner, log *slog.Logger) reconcile.Handler {
	return NewWithOptions(Options{DB: db, Keyring: ring, Runner: runner, Logger: log})
}

// NewWithOptions returns a reconciler with explicit options.
func NewWithOptions(o Options) *Reconciler {
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = DefaultMaxAttempts
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Runner == nil {
		o.Runner = &bmc.Runner{Logger: o.Logger}
	}
	return &Reconciler{opts: o}
}

// Reconcile handles one node: drives its transient state, or does the work its resting state
// still owes, or nothing.
func (r *Reconciler) Reconcile(ctx context.Context, lease store.Lease) (reconcile.Result, error) {
	n, err := store.GetMetalNode(ctx, r.opts.DB.Q(), lease.ResourceID)
	if errors.Is(err, store.ErrNotFound) {
		return reconcile.Result{}, nil
	}
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("metal: load node %s: %w", lease.ResourceID, err)
	}
	state, err := metal.ParseState(n.State)
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("metal: node %s: %w", n.ID, err)
	}
	switch {
	case metal.IsTransient(state):
		return reconcile.Result{}, r.drive(ctx, lease, n, state)
	case n.PendingWork == store.MetalWorkProbe || n.PendingWork == store.MetalWorkRetire:
		return reconcile.Result{}, r.chore(ctx, lease, n)
	}
	return reconcile.Result{}, nil
}

// drive runs the workflow of a transient state and records where the node goes.
func (r *Reconciler) drive(ctx context.Context, lease store.Lease, n store.MetalNode, state metal.State) error {
	now, err := r.now(ctx)
	if err != nil {
		return err
	}
	if metal.Expired(state, n.StateEnteredAt, now) {
		// Restarted after the deadline (or retried up to it): fail without touching the BMC.
		reason := fmt.Sprintf("%s did not finish within %s", state, metal.Deadline(state))
		if n.LastError != "" {
			reason += "; last error: " + n.LastError
		}
		return r.fail(ctx, lease, n, state, reason, n.LastError, bmc.Report{LastAnswer: n.LastAnswer})
	}
	target, err := r.target(n)
	if err != nil {
		return r.fail(ctx, lease, n, state, err.Error(), err.Error(), bmc.Report{})
	}
	// The run may take what is left of the state's deadline and no more.
	left := n.StateEnteredAt.Add(metal.Deadline(state)).Sub(now)
	runCtx, cancel := context.WithTimeout(ctx, left)
	rep, runErr := r.opts.Runner.RunWith(runCtx, target, metal.WorkflowOf(state),
		bmc.RunOptions{Check: r.unmoved(n), Settling: r.settling(lease, n)})
	cancel()
	if runErr == nil {
		return r.complete(ctx, lease, n, state, rep)
	}
	if ctx.Err() != nil {
		// The lease was lost or the replica is stopping: whoever runs next drives it again.
		return fmt.Errorf("metal: node %s: %w", n.ID, context.Cause(ctx))
	}
	attempt := lease.Attempts + 1
	why := describe(runErr)
	log := r.opts.Logger.With(slog.String("node", n.ID), slog.String("state", string(state)),
		slog.Int("attempt", attempt), slog.String("error", why))
	now, err = r.now(ctx)
	if err != nil {
		return err
	}
	switch {
	case !bmc.Retryable(runErr):
		log.LogAttrs(ctx, slog.LevelWarn, "metal workflow failed permanently")
		return r.fail(ctx, lease, n, state, why, why, rep)
	case metal.Expired(state, n.StateEnteredAt, now):
		log.LogAttrs(ctx, slog.LevelWarn, "metal workflow past its deadline")
		reason := fmt.Sprintf("%s did not finish within %s; last error: %s", state, metal.Deadline(state), why)
		return r.fail(ctx, lease, n, state, reason, why, rep)
	case attempt >= r.opts.MaxAttempts:
		log.LogAttrs(ctx, slog.LevelWarn, "metal workflow gave up")
		reason := fmt.Sprintf("gave up after %d attempts: %s", attempt, why)
		return r.fail(ctx, lease, n, state, reason, why, rep)
	}
	log.LogAttrs(ctx, slog.LevelInfo, "metal workflow will be retried")
	moved, err := r.note(ctx, lease, store.MetalOutcome{
		ID: n.ID, Version: n.Version, State: n.State, PendingWork: n.PendingWork, LastError: why,
		FailureReason: n.FailureReason, LastAnswer: answer(rep, n), PowerState: power(rep),
		PowerReadAt: readAt(rep), PowerRequested: string(rep.PowerRequested), BMCAuth: rep.Auth,
	}, nil)
	if err != nil || moved {
		// moved: a verb changed the node meanwhile and queued it again; run that at once
		// rather than after this failure's backoff.
		return err
	}
	// The bmc error is retryable (it wraps provider.ErrTransient): the runner backs off quietly.
	return runErr
}

// chore does the work a resting node still owes (probe or retire's power-off), best effort: it
// never changes the state, and after MaxAttempts retryable failures it records the error and
// stops.
func (r *Reconciler) chore(ctx context.Context, lease store.Lease, n store.MetalNode) error {
	target, err := r.target(n)
	if err != nil {
		return r.record(ctx, lease, r.resting(n, bmc.Report{}, err.Error()), nil)
	}
	var rep bmc.Report
	if n.PendingWork == store.MetalWorkRetire {
		rep, err = r.opts.Runner.RunChecked(ctx, target, metal.WorkflowRetire, r.unmoved(n))
	} else {
		rep, err = r.opts.Runner.Probe(ctx, target)
	}
	switch {
	case err == nil:
		return r.record(ctx, lease, r.resting(n, rep, ""), nil)
	case ctx.Err() != nil:
		return fmt.Errorf("metal: node %s: %w", n.ID, context.Cause(ctx))
	case bmc.Retryable(err) && lease.Attempts+1 < r.opts.MaxAttempts:
		out := r.resting(n, rep, describe(err))
		out.PendingWork = n.PendingWork // still owed
		if moved, werr := r.note(ctx, lease, out, nil); werr != nil || moved {
			return werr
		}
		return err
	}
	r.opts.Logger.LogAttrs(ctx, slog.LevelWarn, "metal "+n.PendingWork+" failed", slog.String("node", n.ID),
		slog.String("error", describe(err)))
	return r.record(ctx, lease, r.resting(n, rep, describe(err)), nil)
}

// errMoved stops a run whose node changed since the run read it.
var errMoved = errors.New("the node changed while its workflow ran (an abort or another verb)")

// unmoved is the check the BMC runner makes before every request it sends: the node still has
// the version the run began with. An abort (or any other verb, or new credentials) moves the
// version in the same transaction that records it, so from its commit on nothing more of the old
// workflow reaches the BMC; a request already on the wire when it commits is the only one that
// may still arrive. One primary-key read per BMC request, against requests that take a BMC
// tens of milliseconds to seconds.
func (r *Reconciler) unmoved(n store.MetalNode) bmc.Check {
	return func(ctx context.Context) error {
		cur, err := store.GetMetalNode(ctx, r.opts.DB.Q(), n.ID)
		switch {
		case errors.Is(err, store.ErrNotFound):
			return errMoved
		case err != nil:
			return fmt.Errorf("metal: reading node %s before a BMC request: %w", n.ID, err)
		case cur.Version != n.Version:
			return errMoved
		}
		return nil
	}
}

// settling shows on the node, while a power change settles, the state asked for beside the
// BMC's reading, fenced by the lease and the node's version. A failed write only loses the
// display: the outcome is written at the end of the run anyway.
func (r *Reconciler) settling(lease store.Lease, n store.MetalNode) func(context.Context, bmc.PowerState, bmc.PowerState, time.Time) {
	return func(ctx context.Context, requested, reading bmc.PowerState, at time.Time) {
		note := store.MetalPowerNote{ID: n.ID, Version: n.Version, PowerState: string(reading), PowerRequested: string(requested)}
		if !at.IsZero() {
			note.PowerReadAt = &at
		}
		err := reconcile.WriteResult(ctx, r.opts.DB, lease, func(tx store.Tx) error {
			if err := store.NoteMetalPower(ctx, tx, note); !errors.Is(err, store.ErrNotFound) {
				return err
			}
			return nil
		})
		if err != nil {
			r.opts.Logger.LogAttrs(ctx, slog.LevelDebug, "metal power note not written", slog.String("node", n.ID), slog.String("error", err.Error()))
		}
	}
}

// resting is the outcome of a chore: the state and failure reason stay, the chore is done.
func (r *Reconciler) resting(n store.MetalNode, rep bmc.Report, lastError string) store.MetalOutcome {
	return store.MetalOutcome{
		ID: n.ID, Version: n.Version, State: n.State, PendingWork: store.MetalWorkNone, LastError: lastError,
		FailureReason: n.FailureReason, LastAnswer: answer(rep, n), PowerState: power(rep),
		PowerReadAt: readAt(rep), PowerRequested: string(rep.PowerRequested), BMCAuth: rep.Auth,
	}
}

// complete moves a transient state into its success state.
func (r *Reconciler) complete(ctx context.Context, lease store.Lease, n store.MetalNode, state metal.State, rep bmc.Report) error {
	next, err := metal.Complete(state)
	if err != nil {
		return err
	}
	inv, err := inventoryJSON(rep.Inventory)
	if err != nil {
		return err
	}
	r.opts.Logger.LogAttrs(ctx, slog.LevelInfo, "metal workflow succeeded", slog.String("node", n.ID),
		slog.String("from", string(state)), slog.String("to", string(next)), slog.String("driver", rep.Provider))
	return r.record(ctx, lease, store.MetalOutcome{
		ID: n.ID, Version: n.Version, State: string(next), PendingWork: store.MetalWorkNone,
		LastAnswer: answer(rep, n), PowerState: power(rep), Inventory: inv, ClearImage: state == metal.Releasing,
		PowerReadAt: readAt(rep), PowerRequested: string(rep.PowerRequested), BMCAuth: rep.Auth,
	}, movedEvent(state, next, "succeeded", ""))
}

// fail moves a transient state into its failure state with the reason.
func (r *Reconciler) fail(ctx context.Context, lease store.Lease, n store.MetalNode, state metal.State, reason, lastError string, rep bmc.Report) error {
	next, err := metal.Fail(state)
	if err != nil {
		return err
	}
	return r.record(ctx, lease, store.MetalOutcome{
		ID: n.ID, Version: n.Version, State: string(next), PendingWork: store.MetalWorkNone,
		LastError: lastError, FailureReason: reason, LastAnswer: answer(rep, n), PowerState: power(rep),
		PowerReadAt: readAt(rep), PowerRequested: string(rep.PowerRequested), BMCAuth: rep.Auth,
	}, movedEvent(state, next, "failed", reason))
}

// now is the clock deadlines are measured on.
func (r *Reconciler) now(ctx context.Context) (time.Time, error) {
	if r.opts.Now != nil {
		return r.opts.Now(), nil
	}
	t, err := store.DatabaseNow(ctx, r.opts.DB.Q())
	if err != nil {
		return time.Time{}, fmt.Errorf("metal: database clock: %w", err)
	}
	return t, nil
}

// target opens the node's sealed password (bound to its id) into a BMC target. The error says
// why it cannot be opened and carries nothing of the value.
func (r *Reconciler) target(n store.MetalNode) (bmc.Target, error) {
	if r.opts.Keyring == nil {
		return bmc.Target{}, errors.New("BMC credentials cannot be opened: no sealing key configured")
	}
	pw, err := r.opts.Keyring.OpenSecret(string(n.BMCPasswordSealed), []byte(n.ID))
	if err != nil {
		return bmc.Target{}, fmt.Errorf("BMC credentials cannot be opened (is the sealing key that sealed them configured?): %w", err)
	}
	t := bmc.Target{
		Address: n.BMCAddress, Port: n.BMCPort, Protocol: bmc.Protocol(n.BMCProtocol), Username: n.BMCUsername,
		Password: pw, InsecureTLS: n.BMCInsecureTLS, LegacyBoot: n.BMCLegacyBoot, SystemID: n.BMCSystemID,
	}
	if n.BMCCACertPEM != "" {
		t.CACertPEM = []byte(n.BMCCACertPEM)
	}
	return t, nil
}

// describe says what went wrong at the BMC for the node's view: the kind of failure first
// ("credentials refused", "unreachable"), then the scrubbed step error. A bmc error carries no
// credential (provider/bmc scrubs it); nothing else reaches here but the target errors above.
func describe(err error) string {
	var be *bmc.Error
	if errors.As(err, &be) && be.Kind != nil {
		return strings.TrimPrefix(be.Kind.Error(), "bmc: ") + ": " + be.Error()
	}
	return err.Error()
}
