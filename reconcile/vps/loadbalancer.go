package vps

import (
	"context"
	"errors"
	"fmt"
	"time"

	"better-compute.dev/compute/provider"
	"better-compute.dev/compute/reconcile"
	"better-compute.dev/compute/reconcile/managed"
	"better-compute.dev/compute/store"
)

// lbPass is one pass over a load balancer: observe it at the provider (from the account's
// list snapshot), adopt the one a lost create made (only while the create-pending mark is set),
// create it, update it when its settings changed or drifted, and record it ready; or delete it.
type lbPass struct {
	r   *Reconciler
	f   *managed.Fence
	row store.LoadBalancer
	p   provider.Provider

	want    desiredLB
	obs     *provider.LoadBalancer // what the provider holds
	fresh   bool                   // created in this pass
	applied int64                  // the spec version the provider holds
	drift   []string               // the parts someone else changed at the provider (outOfBand)
	putBack []string               // drift, once this pass's Update put them back
	read    store.LoadBalancerPass // what the pass read first, the row among it
}

var _ managed.Resource = (*lbPass)(nil)

// loadLoadBalancer reads the row with its account and pool's instances in one round trip.
func (r *Reconciler) loadLoadBalancer(ctx context.Context, f *managed.Fence) (managed.Resource, error) {
	read, err := store.ReadLoadBalancerPass(ctx, r.opts.DB, f.Lease.ResourceID)
	if err != nil {
		return nil, fmt.Errorf("vps: %w", err)
	}
	row := read.LoadBalancer
	if errors.Is(read.Found, store.ErrNotFound) || row.State == "deleted" {
		return nil, nil
	}
	return &lbPass{r: r, f: f, row: row, applied: row.AppliedVersion, read: read}, nil
}

func (l *lbPass) ID() string     { return l.row.ID }
func (l *lbPass) Deleting() bool { return l.row.State == "deleting" }

func (l *lbPass) connect(ctx context.Context) (err error) {
	if l.read.AccountFound == nil && l.read.Account.ID == l.row.AccountID {
		if l.p, err = l.r.providers.Open(ctx, l.read.Account); err != nil {
			return fmt.Errorf("vps: %w", err)
		}
		return nil
	}
	l.p, err = l.r.connect(ctx, l.row.AccountID)
	return err
}

// Observe reads what the load balancer needs (it waits for subnets, certificates and target
// load balancers) and the one recorded at the provider. One deleted at the provider behind our
// back is forgotten, and the next pass makes it again.
func (l *lbPass) Observe(ctx context.Context) (managed.Observation, error) {
	if err := l.connect(ctx); err != nil {
		return managed.Observation{}, err
	}
	want, err := l.r.desiredLoadBalancer(ctx, l.p, l.row, l.read.PoolInstances)
	if err != nil {
		return managed.Observation{}, err
	}
	if want.waitFor != "" {
		return managed.After(l.r.opts.DependencyPoll), nil
	}
	l.want = want
	if l.row.ProviderID == "" {
		return managed.Observation{}, nil
	}
	obs, err := l.r.pollLB(ctx, l.p, l.row)
	switch {
	case errors.Is(err, provider.ErrDeferred):
		return l.deferred(), nil
	case errors.Is(err, provider.ErrNotFound):
		err = write(ctx, l.f, func(w *writer) error { return w.forgetLB(l.row) })
		if err == nil {
			err = errRowChanged
		}
		return managed.End(reconcile.Result{}, err)
	case err != nil:
		return managed.Observation{}, err
	}
	l.obs = obs
	return l.examine(ctx)
}

// deferred parks a pass whose list could not be read now (the budget is kept for creates).
func (l *lbPass) deferred() managed.Observation {
	l.r.park(l.p, l.row)
	return managed.After(l.r.parkBackstop())
}

// examine decides what the load balancer the provider holds needs: an errored one puts the
// row in error, one still new parks the pass, and one whose settings differ is updated (a PUT
// replaces the whole load balancer: Update sends all of the desired state). A difference
// someone else made at the provider (outOfBand) is remembered, to be published once Update
// has put it back.
func (l *lbPass) examine(ctx context.Context) (managed.Observation, error) {
	switch l.obs.Status {
	case provider.LoadBalancerErrored:
		return managed.End(l.terminal(ctx, l.obs, "the provider reports load balancer "+l.obs.ID+" errored"))
	case provider.LoadBalancerNew:
		return managed.End(l.parkLB(ctx))
	}
	differs := len(lbDrift(l.want.spec, *l.obs)) > 0
	l.drift = nil
	if differs && !l.fresh {
		l.drift = outOfBand(l.row, l.want.spec, l.obs)
	}
	stale := (!l.fresh && l.row.AppliedVersion < l.row.SpecVersion) || differs
	return managed.Found(!stale), nil
}

// CreatePending: only the durable mark can mean a create went out unrecorded.
func (l *lbPass) CreatePending() bool { return l.row.CreatePendingAt != nil }

func (l *lbPass) Adopt(ctx context.Context, name string) (managed.Observation, error) {
	obs, err := l.p.LoadBalancers().FindByName(ctx, name)
	switch {
	case errors.Is(err, provider.ErrNotFound):
		return managed.Observation{}, nil
	case errors.Is(err, provider.ErrDeferred):
		return l.deferred(), nil
	case err != nil:
		return managed.Observation{}, err
	}
	l.obs = obs
	return l.examine(ctx)
}

func (l *lbPass) Prepare(context.Context, string) (managed.Observation, error) {
	return managed.Observation{}, nil
}

func (l *lbPass) MarkCreatePending(ctx context.Context, tx store.Tx) error {
	return (&writer{ctx: ctx, tx: tx}).markCreatePending(l.row)
}

func (l *lbPass) Create(ctx context.Context, _ string) (err error) {
	l.obs, err = l.p.LoadBalancers().Create(ctx, l.want.spec)
	return err
}

// Created: made from the settings read at the start of this pass.
func (l *lbPass) Created(ctx context.Context) (managed.Observation, error) {
	l.fresh, l.applied = true, l.row.SpecVersion
	return l.examine(ctx)
}

func (l *lbPass) Update(ctx context.Context) (managed.Observation, error) {
	updated, err := l.p.LoadBalancers().Update(ctx, l.obs.ID, l.want.spec)
	if errors.Is(err, provider.ErrBusy) {
		return managed.End(l.record(ctx, false, l.r.opts.ProviderPoll))
	}
	if err != nil {
		return managed.Observation{}, err
	}
	if updated.Address == "" {
		updated.Address, updated.AddressV6 = l.obs.Address, l.obs.AddressV6
	}
	l.obs, l.applied, l.putBack = updated, l.row.SpecVersion, l.drift
	return managed.Found(true), nil
}

// Record writes the load balancer ready once it has an address (publishing
// providerLoadBalancer.ready and opening its usage when it becomes so); until then it parks.
func (l *lbPass) Record(ctx context.Context) (reconcile.Result, error) {
	if l.obs.Address == "" {
		return l.parkLB(ctx)
	}
	return l.record(ctx, true, 0)
}

// parkLB records what the provider holds while it builds the load balancer, then parks the
// pass: the account's watcher queues it again once a list shows it active with an address.
func (l *lbPass) parkLB(ctx context.Context) (reconcile.Result, error) {
	res, err := l.record(ctx, false, l.r.parkBackstop())
	if err != nil {
		return res, err
	}
	l.r.park(l.p, l.row)
	return res, nil
}

// record writes what the provider holds (with ready it moves the row to ready, and a drift
// this pass put back is recorded with its event) in two round trips (writeLB), and returns the
// pass's outcome: due again after after, or done when it is zero.
func (l *lbPass) record(ctx context.Context, ready bool, after time.Duration) (reconcile.Result, error) {
	// The global load balancers that wait for this one's provider id were read with the row,
	// before the transaction, not in it: under SERIALIZABLE that join reads load_balancers
	// widely enough to make concurrent writes of other load balancers fail. One made meanwhile
	// is not missed: a global waiting on a target comes back by itself (DependencyPoll).
	globals := l.read.Globals
	return requeueAfter(writeLB(ctx, l.f, l.row.ID, func(cur store.LoadBalancer, w *store.Writes) error {
		return observeLB(l.row, cur, w, l.obs, l.want, l.applied, ready, globals, l.putBack)
	}), after)
}

// Delete deletes the load balancer at the provider (and any other of its name a lost create
// left).
func (l *lbPass) Delete(ctx context.Context, name string) error {
	if err := l.connect(ctx); err != nil {
		return err
	}
	if l.row.ProviderID == "" && l.row.CreatePendingAt == nil {
		return nil
	}
	lbs := l.p.LoadBalancers()
	return managed.DeleteByName(ctx, l.row.ProviderID, name, lbs.Delete,
		managed.FindID(lbs.FindByName, func(lb *provider.LoadBalancer) string { return lb.ID }))
}

// Deleted records it deleted, closes its usage, refunds its quota and publishes
// providerLoadBalancer.deleted.
func (l *lbPass) Deleted(ctx context.Context) error {
	return write(ctx, l.f, func(w *writer) error { return w.deletedLB(l.row) })
}

// Errored puts the load balancer in error and publishes providerLoadBalancer.error.
func (l *lbPass) Errored(ctx context.Context, cause error) (reconcile.Result, error) {
	return l.terminal(ctx, nil, cause.Error())
}

func (l *lbPass) terminal(ctx context.Context, obs *provider.LoadBalancer, msg string) (reconcile.Result, error) {
	return reconcile.Result{}, write(ctx, l.f, func(w *writer) error { return w.errorLB(l.row, obs, msg) })
}

// Failing shows a retryable failure as the row's last error (not a rate limit: the runner
// waits for the time the provider names).
func (l *lbPass) Failing(ctx context.Context, cause error) error {
	if provider.Retryable(cause) && !isRateLimited(cause) {
		err := write(ctx, l.f, func(w *writer) error { return w.lbLastError(l.row, cause.Error()) })
		if err != nil && !errors.Is(err, errRowChanged) {
			return err
		}
	}
	return cause
}

func isRateLimited(err error) bool {
	var rl *provider.RateLimitedError
	return errors.As(err, &rl)
}
