package vps

import (
	"context"
	"errors"
	"fmt"

	"better-compute.dev/compute/provider"
	"better-compute.dev/compute/reconcile"
	"better-compute.dev/compute/store"
)

// reconcileLoadBalancer runs one pass on a load balancer: delete it, or observe it at the
// provider (adopting one a lost create made), create it, update it, and record ready.
func (r *Reconciler) reconcileLoadBalancer(ctx context.Context, lease store.Lease) (reconcile.Result, error) {
	row, err := store.GetLoadBalancer(ctx, r.opts.DB.Q(), lease.ResourceID)
	if errors.Is(err, store.ErrNotFound) {
		return reconcile.Result{}, nil
	}
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("vps: %w", err)
	}
	if row.State == "deleted" {
		return reconcile.Result{}, nil
	}
	p, err := r.providerFor(ctx, row.AccountID)
	if err != nil {
		return r.lbFailed(ctx, lease, row, err)
	}
	if row.State == "deleting" {
		return r.deleteLoadBalancer(ctx, lease, p, row)
	}
	want, err := r.desiredLoadBalancer(ctx, p, row)
	if err != nil {
		return r.lbFailed(ctx, lease, row, err)
	}
	if want.waitFor != "" {
		return reconcile.Result{RequeueAfter: r.opts.DependencyPoll}, nil
	}
	obs, fresh, err := r.observeOrCreateLB(ctx, lease, p, row, want)
	if errors.Is(err, provider.ErrDeferred) {
		// No list could be read now (the budget is kept for creates): wait parked.
		r.park(p, row, row.ProviderID)
		return reconcile.Result{RequeueAfter: r.parkBackstop()}, nil
	}
	if err != nil || obs == nil {
		if errors.Is(err, errRowChanged) {
			return reconcile.Result{}, nil
		}
		return r.lbFailed(ctx, lease, row, err)
	}
	applied := row.AppliedVersion
	if fresh {
		applied = row.SpecVersion // made from the settings read at the start of this pass
	}
	switch obs.Status {
	case provider.LoadBalancerErrored:
		return r.lbTerminal(ctx, lease, row, obs, "the provider reports load balancer "+obs.ID+" errored")
	case provider.LoadBalancerNew:
		return r.parkLB(ctx, lease, p, row, obs, want, applied)
	}
	if (!fresh && row.AppliedVersion < row.SpecVersion) || len(lbDrift(want.spec, *obs)) > 0 {
		// A PUT replaces the whole load balancer: send all of the desired state.
		updated, err := p.LoadBalancers().Update(ctx, obs.ID, want.spec)
		if errors.Is(err, provider.ErrBusy) {
			return requeueAfter(r.recordLB(ctx, lease, row, obs, want, applied), r.opts.ProviderPoll)
		}
		if err != nil {
			return r.lbFailed(ctx, lease, row, err)
		}
		if updated.Address == "" {
			updated.Address, updated.AddressV6 = obs.Address, obs.AddressV6
		}
		obs, applied = updated, row.SpecVersion
	}
	if obs.Address == "" {
		return r.parkLB(ctx, lease, p, row, obs, want, applied)
	}
	return settle(r.recordLBReady(ctx, lease, row, obs, want, applied))
}

// observeOrCreateLB returns the load balancer at the provider: the one recorded, the one a
// lost create made (found by its deterministic name when the create-pending mark is set), or a
// new one, created after the mark was written. fresh says it was created in this pass.
func (r *Reconciler) observeOrCreateLB(ctx context.Context, lease store.Lease, p provider.Provider, row store.LoadBalancer, want desiredLB) (obs *provider.LoadBalancer, fresh bool, err error) {
	lbs := p.LoadBalancers()
	if row.ProviderID != "" {
		obs, err = r.pollLB(ctx, p, row)
		if !errors.Is(err, provider.ErrNotFound) {
			return obs, false, err
		}
		// Deleted at the provider behind our back: forget it, and the next pass makes it again.
		err = r.write(ctx, lease, func(w *writer) error { return w.forgetLB(row) })
		if err == nil {
			err = errRowChanged
		}
		return nil, false, err
	}
	if row.CreatePendingAt != nil {
		obs, err = lbs.FindByName(ctx, want.spec.Name)
		if err == nil {
			return obs, false, nil
		}
		if !errors.Is(err, provider.ErrNotFound) {
			return nil, false, err
		}
	}
	err = r.fencedCreate(ctx, lease, func(w *writer) error { return w.markCreatePending(row) }, func(ctx context.Context) error {
		obs, err = lbs.Create(ctx, want.spec)
		return err
	})
	return obs, err == nil, err
}

// parkLB records what the provider holds while it builds the load balancer, then parks the
// pass: the account's watcher queues it again once a list shows it active with an address.
func (r *Reconciler) parkLB(ctx context.Context, lease store.Lease, p provider.Provider, row store.LoadBalancer, obs *provider.LoadBalancer, want desiredLB, applied int64) (reconcile.Result, error) {
	if err := r.recordLB(ctx, lease, row, obs, want, applied); err != nil {
		return settle(err)
	}
	r.park(p, row, obs.ID)
	return reconcile.Result{RequeueAfter: r.parkBackstop()}, nil
}

// deleteLoadBalancer deletes the load balancer at the provider (and any other of its name a
// lost create left), then records it deleted, closes its usage, refunds its quota and
// publishes providerLoadBalancer.deleted.
func (r *Reconciler) deleteLoadBalancer(ctx context.Context, lease store.Lease, p provider.Provider, row store.LoadBalancer) (reconcile.Result, error) {
	if row.ProviderID != "" || row.CreatePendingAt != nil {
		lbs := p.LoadBalancers()
		err := deleteByName(ctx, row.ProviderID, ProviderName(row.ID), lbs.Delete,
			findID(lbs.FindByName, func(lb *provider.LoadBalancer) string { return lb.ID }))
		if err != nil {
			return r.lbFailed(ctx, lease, row, err)
		}
	}
	return settle(r.write(ctx, lease, func(w *writer) error { return w.deletedLB(row) }))
}

// lbFailed records a failed pass. A refusal that will not heal (provider.ErrInvalid) puts the
// load balancer in error and publishes providerLoadBalancer.error; a retryable failure is
// shown as its last error and returned, so the runner retries with backoff (a rate limit at
// the time the provider names).
func (r *Reconciler) lbFailed(ctx context.Context, lease store.Lease, row store.LoadBalancer, cause error) (reconcile.Result, error) {
	switch {
	case errors.Is(cause, errRowChanged):
		return reconcile.Result{}, nil
	case reconcile.LeaseLost(ctx) || errors.Is(cause, store.ErrLeaseLost):
		return reconcile.Result{}, cause
	case terminal(cause):
		return r.lbTerminal(ctx, lease, row, nil, cause.Error())
	case provider.Retryable(cause) && !isRateLimited(cause):
		if err := r.write(ctx, lease, func(w *writer) error { return w.lbLastError(row, cause.Error()) }); err != nil &&
			!errors.Is(err, errRowChanged) {
			return reconcile.Result{}, err
		}
	}
	return reconcile.Result{}, cause
}

// lbTerminal puts the load balancer in error with msg and publishes providerLoadBalancer.error.
func (r *Reconciler) lbTerminal(ctx context.Context, lease store.Lease, row store.LoadBalancer, obs *provider.LoadBalancer, msg string) (reconcile.Result, error) {
	return settle(r.write(ctx, lease, func(w *writer) error { return w.errorLB(row, obs, msg) }))
}

// recordLB writes what the provider holds while it is not ready yet.
func (r *Reconciler) recordLB(ctx context.Context, lease store.Lease, row store.LoadBalancer, obs *provider.LoadBalancer, want desiredLB, applied int64) error {
	return r.write(ctx, lease, func(w *writer) error { return w.observeLB(row, obs, want, applied, false) })
}

// recordLBReady writes the load balancer ready (publishing providerLoadBalancer.ready and
// opening its usage when it becomes so).
func (r *Reconciler) recordLBReady(ctx context.Context, lease store.Lease, row store.LoadBalancer, obs *provider.LoadBalancer, want desiredLB, applied int64) error {
	return r.write(ctx, lease, func(w *writer) error { return w.observeLB(row, obs, want, applied, true) })
}

func isRateLimited(err error) bool {
	var rl *provider.RateLimitedError
	return errors.As(err, &rl)
}
