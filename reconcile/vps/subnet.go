package vps

import (
	"context"
	"errors"
	"fmt"

	"better-compute.dev/compute/provider"
	"better-compute.dev/compute/reconcile"
	"better-compute.dev/compute/reconcile/managed"
	"better-compute.dev/compute/store"
)

// subnetPass makes the subnet's VPC ("bc-<id>" with its region and ip range) and records it
// ready with the provider id, queueing the instances and load balancers that waited for it; or
// deletes the VPC of a subnet being deleted. VPC names are unique in an account: whatever
// carries the name is ours (a lost create's).
type subnetPass struct {
	managed.Base
	r   *Reconciler
	f   *managed.Fence
	row store.Subnet
	p   provider.Provider
	n   *provider.Network
}

var _ managed.Resource = (*subnetPass)(nil)

func (r *Reconciler) loadSubnet(ctx context.Context, f *managed.Fence) (managed.Resource, error) {
	row, err := store.GetSubnet(ctx, r.opts.DB.Q(), f.Lease.ResourceID)
	if errors.Is(err, store.ErrNotFound) || (err == nil && (row.State == "deleted" || row.State == "error")) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("vps: %w", err)
	}
	return &subnetPass{r: r, f: f, row: row}, nil
}

func (s *subnetPass) ID() string     { return s.row.ID }
func (s *subnetPass) Deleting() bool { return s.row.State == "deleting" }

func (s *subnetPass) connect(ctx context.Context) (err error) {
	s.p, err = s.r.connect(ctx, s.row.AccountID)
	return err
}

func (s *subnetPass) Observe(ctx context.Context) (managed.Observation, error) {
	if err := s.connect(ctx); err != nil {
		return managed.Observation{}, err
	}
	if s.row.State == "ready" && s.row.ProviderID != "" {
		return managed.Finish(reconcile.Result{}), nil
	}
	return managed.Observation{}, nil
}

func (s *subnetPass) Adopt(ctx context.Context, name string) (managed.Observation, error) {
	n, err := s.p.Networks().FindByName(ctx, name)
	if errors.Is(err, provider.ErrNotFound) {
		return managed.Observation{}, nil
	}
	if err != nil {
		return managed.Observation{}, err
	}
	s.n = n
	return managed.Found(true), nil
}

func (s *subnetPass) Create(ctx context.Context, name string) (err error) {
	s.n, err = s.p.Networks().Create(ctx, provider.NetworkSpec{Name: name, Region: s.row.Region, IPRange: s.row.IPRange})
	return err
}

func (s *subnetPass) Record(ctx context.Context) (reconcile.Result, error) {
	return reconcile.Result{}, s.state(ctx, "ready", s.n.ID, "")
}

// Delete: a VPC that still has members answers provider.ErrBusy, retried until they are gone.
func (s *subnetPass) Delete(ctx context.Context, name string) error {
	if err := s.connect(ctx); err != nil {
		return err
	}
	nets := s.p.Networks()
	return managed.DeleteByName(ctx, s.row.ProviderID, name, nets.Delete,
		managed.FindID(nets.FindByName, func(n *provider.Network) string { return n.ID }))
}

func (s *subnetPass) Deleted(ctx context.Context) error { return s.state(ctx, "deleted", "", "") }

// Errored records a refusal that will not heal as the subnet's error (not while deleting).
func (s *subnetPass) Errored(ctx context.Context, cause error) (reconcile.Result, error) {
	if s.Deleting() {
		return reconcile.Result{}, cause
	}
	return reconcile.Result{}, s.state(ctx, "error", "", cause.Error())
}

func (s *subnetPass) state(ctx context.Context, state, providerID, lastError string) error {
	return write(ctx, s.f, func(w *writer) error { return w.subnetState(s.row, state, providerID, lastError) })
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
