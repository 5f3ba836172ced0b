package vps

import (
	"context"
	"errors"
	"fmt"

	"better-compute.dev/compute/provider"
	"better-compute.dev/compute/reconcile"
	"better-compute.dev/compute/store"
)

// reconcileSubnet makes the subnet's VPC ("bc-<id>" with its region and ip range) and records
// it ready with the provider id, queueing the instances and load balancers that waited for it;
// or deletes the VPC of a subnet being deleted.
func (r *Reconciler) reconcileSubnet(ctx context.Context, lease store.Lease) (reconcile.Result, error) {
	row, err := store.GetSubnet(ctx, r.opts.DB.Q(), lease.ResourceID)
	if errors.Is(err, store.ErrNotFound) || (err == nil && (row.State == "deleted" || row.State == "error")) {
		return reconcile.Result{}, nil
	}
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("vps: %w", err)
	}
	p, err := r.providerFor(ctx, row.AccountID)
	if err != nil {
		return r.subnetFailed(ctx, lease, row, err)
	}
	nets := p.Networks()
	name := ProviderName(row.ID)
	if row.State == "deleting" {
		// A VPC that still has members answers provider.ErrBusy: retried until they are gone.
		err := deleteByName(ctx, row.ProviderID, name, nets.Delete,
			findID(nets.FindByName, func(n *provider.Network) string { return n.ID }))
		if err != nil {
			return r.subnetFailed(ctx, lease, row, err)
		}
		return settle(r.write(ctx, lease, func(w *writer) error { return w.subnetState(row, "deleted", "", "") }))
	}
	if row.State == "ready" && row.ProviderID != "" {
		return reconcile.Result{}, nil
	}
	// VPC names are unique in an account: whatever carries the name is ours (a lost create's).
	n, err := nets.FindByName(ctx, name)
	if errors.Is(err, provider.ErrNotFound) {
		err = r.fencedCreate(ctx, lease, nil, func(ctx context.Context) error {
			n, err = nets.Create(ctx, provider.NetworkSpec{Name: name, Region: row.Region, IPRange: row.IPRange})
			return err
		})
	}
	if err != nil {
		return r.subnetFailed(ctx, lease, row, err)
	}
	return settle(r.write(ctx, lease, func(w *writer) error { return w.subnetState(row, "ready", n.ID, "") }))
}

// subnetFailed records a refusal that will not heal as the subnet's error.
func (r *Reconciler) subnetFailed(ctx context.Context, lease store.Lease, row store.Subnet, cause error) (reconcile.Result, error) {
	if !terminal(cause) || reconcile.LeaseLost(ctx) || row.State == "deleting" {
		return reconcile.Result{}, cause
	}
	return settle(r.write(ctx, lease, func(w *writer) error { return w.subnetState(row, "error", "", cause.Error()) }))
}

// subnetState moves the subnet from the state the pass read to state; a ready subnet queues
// its waiters.
func (w *writer) subnetState(read store.Subnet, state, providerID, lastError string) error {
	cur, err := store.GetSubnetForUpdate(w.ctx, w.tx, read.ID)
	if err != nil {
		return err
	}
	if cur.State != read.State {
		if providerID == "" || cur.ProviderID == providerID {
			return errRowChanged
		}
		state = cur.State // keep the request's state, but remember what the provider made
	}
	if err := store.SetSubnetState(w.ctx, w.tx, cur.ID, state, providerID, lastError); err != nil {
		return err
	}
	if state != "ready" {
		return nil
	}
	waiters, err := store.SubnetWaiters(w.ctx, w.tx, cur.ID)
	if err != nil {
		return err
	}
	return w.enqueueAll(waiters)
}
