// Package managed is the one seam every resource the reconcilers keep at a provider goes
// through: load balancers, instances, subnets and certificates (reconcile/vps) and substrate
// clusters (reconcile/substrates).
//
// A kind supplies, for one row and one pass, a Resource: how to observe what the provider holds,
// adopt what a lost create left, create, update and delete it, and how to record each outcome.
// Loop.Run is the one reconcile loop over it, and it alone owns the rules that keep creates from
// duplicating and stale replicas from writing:
//
//   - every write of a pass goes through the pass's Fence (reconcile.WriteResult), so a replica
//     whose lease was taken over writes nothing;
//   - the provider-side name is deterministic (ProviderName): when a create may have been sent
//     whose answer was not recorded (Resource.CreatePending), the loop looks the name up and
//     adopts what it finds instead of creating again;
//   - a create is preceded by a fenced write of the durable create-pending mark, and runs under
//     the create window, measured from before that write (see Loop.CreateWindow for why that
//     makes the fence hold across a paused process);
//   - failures are classified once: a changed row ends the pass quietly, a lost lease stops it,
//     a refusal that will not heal (provider.ErrInvalid) is the kind's terminal error, anything
//     else is shown as the kind chooses and returned to the runner, which backs off.
package managed

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"better-compute.dev/compute/provider"
	"better-compute.dev/compute/reconcile"
	"better-compute.dev/compute/store"
)

// DefaultCreateWindow is the create window unless a reconciler's options say otherwise.
const DefaultCreateWindow = 10 * time.Second

// ProviderName is the deterministic provider-side name of the resource a row stands for: "bc-"
// and the row's id with the type prefix's underscore turned into a dash (droplet, VPC, load
// balancer and cluster names take letters, digits, dashes and dots; cluster names are DNS
// labels). It is the adoption key after a lost create.
func ProviderName(id string) string {
	return "bc-" + strings.ReplaceAll(id, "_", "-")
}

// ErrRowChanged stops a write whose premise a concurrent request changed (a new spec, a
// delete): that request queued the resource again, so the next pass starts from the new row.
// The loop ends a pass that meets it without an error.
var ErrRowChanged = errors.New("managed: the row changed during the pass")

// Observation is what a step learned about the provider-side resource.
type Observation struct {
	// Exists says the provider holds the resource the row stands for.
	Exists bool
	// UpToDate says it matches what the row asks for: Update is not called.
	UpToDate bool
	// Done ends the pass with Result: the step recorded what it learned, or there is nothing
	// to do, or the pass waits for the provider or another resource.
	Done   bool
	Result reconcile.Result
}

// Found is an observation of an existing resource.
func Found(upToDate bool) Observation { return Observation{Exists: true, UpToDate: upToDate} }

// Finish ends the pass with res.
func Finish(res reconcile.Result) Observation { return Observation{Done: true, Result: res} }

// After ends the pass, asking to run again after d.
func After(d time.Duration) Observation { return Finish(reconcile.Result{RequeueAfter: d}) }

// End ends the pass with the outcome of a record: res, unless err.
func End(res reconcile.Result, err error) (Observation, error) { return Finish(res), err }

// Resource is one row of a kind during one pass. The steps that talk to the provider (Observe,
// Adopt, Create, Update, Delete) return the provider's errors, which the loop classifies; an
// error returned with a Done observation, and the errors of the records (Created, Record,
// Deleted, Errored), are a fenced write's and are returned as they are.
type Resource interface {
	// ID is the row's id; the provider-side name is ProviderName(ID()).
	ID() string
	// Deleting says the row asks for the resource's removal.
	Deleting() bool
	// Observe reports the resource the row records at the provider (by its provider id). An
	// absent observation sends the loop to adoption or creation.
	Observe(ctx context.Context) (Observation, error)
	// CreatePending says a create may have been sent whose answer was not recorded: the
	// durable mark is set, or the kind keeps none and cannot rule it out.
	CreatePending() bool
	// Adopt looks for a resource of the deterministic name and takes it as the row's;
	// absent when there is none.
	Adopt(ctx context.Context, name string) (Observation, error)
	// Prepare runs before the create's fence: it builds the request and may end the pass
	// (a create that cannot be made).
	Prepare(ctx context.Context, name string) (Observation, error)
	// MarkCreatePending writes the durable create-pending mark in the fenced write before the
	// create; kinds that keep no mark write nothing (the fence still checks the lease).
	MarkCreatePending(ctx context.Context, tx store.Tx) error
	// Create sends the create request; ctx carries the create window's deadline.
	Create(ctx context.Context, name string) error
	// Created examines (and may record) what the create made, on the pass's context.
	Created(ctx context.Context) (Observation, error)
	// Update brings an existing resource to what the row asks for.
	Update(ctx context.Context) (Observation, error)
	// Record writes what the provider holds once it exists and is up to date.
	Record(ctx context.Context) (reconcile.Result, error)
	// Delete removes the resource at the provider: the one recorded and any of its name.
	Delete(ctx context.Context, name string) error
	// Deleted records the row deleted.
	Deleted(ctx context.Context) error
	// Errored records a refusal that will not heal (provider.ErrInvalid); a kind that keeps
	// no such record for the row's state returns (zero, cause).
	Errored(ctx context.Context, cause error) (reconcile.Result, error)
	// Failing shows a failure that a retry may heal, as the kind shows them, and returns the
	// error the runner backs off on (cause, or the failure of that write).
	Failing(ctx context.Context, cause error) error
}

// Kind reads the row a lease names and makes its Resource.
type Kind interface {
	// Load reads the row of the fence's lease and returns its Resource, nil when there is
	// nothing to reconcile (the row is gone, deleted or in a final state). Every write of the
	// pass goes through f.
	Load(ctx context.Context, f *Fence) (Resource, error)
}

// KindFunc adapts a function to Kind.
type KindFunc func(ctx context.Context, f *Fence) (Resource, error)

// Load calls k.
func (k KindFunc) Load(ctx context.Context, f *Fence) (Resource, error) { return k(ctx, f) }

// Base gives a Resource the defaults of its optional steps: a create may always have been
// sent (no durable mark), nothing to prepare, no mark to write, a created resource is up to
// date, nothing to update, and retryable failures are shown nowhere.
type Base struct{}

func (Base) CreatePending() bool                                  { return true }
func (Base) Prepare(context.Context, string) (Observation, error) { return Observation{}, nil }
func (Base) MarkCreatePending(context.Context, store.Tx) error    { return nil }
func (Base) Created(context.Context) (Observation, error)         { return Found(true), nil }
func (Base) Update(context.Context) (Observation, error)          { return Found(true), nil }
func (Base) Failing(_ context.Context, cause error) error         { return cause }

// Fence is the lease of one pass: every result the pass records goes through Write.
type Fence struct {
	DB    *store.DB
	Lease store.Lease
	// RowLocked says every write through this fence decides only from rows it locks (FOR
	// UPDATE) and writes the rest blindly, so it may run as reconcile.WriteLocked.
	RowLocked bool
}

// Write runs fn in a transaction that first checks the lease: reconcile.WriteLocked when the
// fence is RowLocked, reconcile.WriteResult (SERIALIZABLE) otherwise. fn may run more than
// once (serialization retries): it must only touch the database.
func (f *Fence) Write(ctx context.Context, fn func(ctx context.Context, tx store.Tx) error) error {
	write := reconcile.WriteResult
	if f.RowLocked {
		write = reconcile.WriteLocked
	}
	return write(ctx, f.DB, f.Lease, func(tx store.Tx) error { return fn(ctx, tx) })
}

// Loop runs passes of managed resources.
type Loop struct {
	DB *store.DB
	// CreateWindow bounds a create request at the provider, measured from before the fenced
	// create-pending write on the monotonic clock, which runs on while a process is stopped.
	// A replica paused between its mark and the request finds the window spent when it resumes
	// and sends nothing, whereas a replica that took the lease over meanwhile may already have
	// created. Keep it well below the lease TTL. Default DefaultCreateWindow.
	CreateWindow time.Duration
	// RowLocked makes every pass's Fence RowLocked: set it only for kinds whose every fenced
	// write (MarkCreatePending included) decides from rows it locks.
	RowLocked bool
}

// Run is one pass of kind over the lease's resource.
func (l Loop) Run(ctx context.Context, lease store.Lease, kind Kind) (reconcile.Result, error) {
	f := &Fence{DB: l.DB, Lease: lease, RowLocked: l.RowLocked}
	r, err := kind.Load(ctx, f)
	if err != nil || r == nil {
		return reconcile.Result{}, err
	}
	name := ProviderName(r.ID())
	if r.Deleting() {
		if err := r.Delete(ctx, name); err != nil {
			return l.fail(ctx, r, err)
		}
		return settle(reconcile.Result{}, r.Deleted(ctx))
	}
	obs, err := r.Observe(ctx)
	if next(obs, err) && r.CreatePending() {
		obs, err = r.Adopt(ctx, name)
	}
	if next(obs, err) {
		obs, err = l.create(ctx, f, r, name)
	}
	if err == nil && !obs.Done && !obs.UpToDate {
		obs, err = r.Update(ctx)
	}
	switch {
	case obs.Done:
		return settle(obs.Result, err)
	case err != nil:
		return l.fail(ctx, r, err)
	}
	return settle(r.Record(ctx))
}

// next says the resource is still absent and the pass goes on.
func next(obs Observation, err error) bool { return err == nil && !obs.Done && !obs.Exists }

// create prepares the request, writes the mark under the fence and sends the request within
// the create window, refusing once the window has passed.
func (l Loop) create(ctx context.Context, f *Fence, r Resource, name string) (Observation, error) {
	if obs, err := r.Prepare(ctx, name); err != nil || obs.Done {
		return obs, err
	}
	window := l.CreateWindow
	if window <= 0 {
		window = DefaultCreateWindow
	}
	deadline := time.Now().Add(window)
	if err := f.Write(ctx, r.MarkCreatePending); err != nil {
		return Finish(reconcile.Result{}), err
	}
	if !time.Now().Before(deadline) || ctx.Err() != nil {
		return Observation{}, fmt.Errorf("managed: create window of %s passed before the request: %w", r.ID(), provider.ErrTransient)
	}
	cctx, cancel := context.WithDeadline(ctx, deadline)
	err := r.Create(cctx, name)
	cancel()
	if err != nil {
		return Observation{}, err
	}
	return r.Created(ctx)
}

// fail classifies a provider step's failure.
func (l Loop) fail(ctx context.Context, r Resource, cause error) (reconcile.Result, error) {
	switch {
	case errors.Is(cause, ErrRowChanged):
		return reconcile.Result{}, nil
	case reconcile.LeaseLost(ctx) || errors.Is(cause, store.ErrLeaseLost):
		return reconcile.Result{}, cause
	case Terminal(cause):
		return settle(r.Errored(ctx, cause))
	}
	return reconcile.Result{}, r.Failing(ctx, cause)
}

// Terminal reports whether a provider failure will not heal by retrying the same request.
func Terminal(err error) bool {
	return errors.Is(err, provider.ErrInvalid)
}

// settle turns the outcome of a record into the pass's: a changed row is no failure.
func settle(res reconcile.Result, err error) (reconcile.Result, error) {
	if errors.Is(err, ErrRowChanged) {
		return reconcile.Result{}, nil
	}
	if err != nil {
		return reconcile.Result{}, err
	}
	return res, nil
}

// DeleteByName deletes the resource with the recorded id (if any), then any left under its
// deterministic name (a lost create's), so nothing of it stays at the provider.
func DeleteByName(ctx context.Context, id, name string, del func(context.Context, string) error,
	find func(context.Context, string) (string, error)) error {
	if id != "" {
		if err := del(ctx, id); err != nil {
			return err
		}
	}
	for range 3 {
		found, err := find(ctx, name)
		if errors.Is(err, provider.ErrNotFound) {
			return nil
		}
		if err == nil {
			err = del(ctx, found)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// FindID adapts a FindByName to return the id alone.
func FindID[T any](find func(context.Context, string) (*T, error), id func(*T) string) func(context.Context, string) (string, error) {
	return func(ctx context.Context, name string) (string, error) {
		v, err := find(ctx, name)
		if err != nil {
			return "", err
		}
		return id(v), nil
	}
}
