package vps

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/protobuf/encoding/protojson"

	v1 "better-compute.dev/compute/gen/go/bettercompute/compute/v1"
	"better-compute.dev/compute/provider"
	"better-compute.dev/compute/reconcile"
	"better-compute.dev/compute/store"
)

// quotaInstances is the quota resource an instance books on its pool.
const quotaInstances = "instances"

// reconcileInstance makes the instance's droplet ("bc-<id>", in its subnet's VPC, of its
// flavor's size) and records it running with the machine id, or deletes the droplet of an
// instance being deleted. The load balancers that reach an instance are queued in the write
// that gives it a machine, so they add it at once.
func (r *Reconciler) reconcileInstance(ctx context.Context, lease store.Lease) (reconcile.Result, error) {
	q := r.opts.DB.Q()
	row, err := store.GetInstance(ctx, q, lease.ResourceID)
	if errors.Is(err, store.ErrNotFound) || (err == nil && row.State == "deleted") {
		return reconcile.Result{}, nil
	}
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("vps: %w", err)
	}
	p, err := r.providerFor(ctx, row.AccountID)
	if err != nil {
		return r.instanceFailed(ctx, lease, row, err)
	}
	machines := p.Machines()
	name := ProviderName(row.ID)
	if row.State == "deleting" {
		if err := deleteByName(ctx, row.MachineID, name, machines.Delete,
			findID(machines.FindByName, func(m *provider.Machine) string { return m.ID })); err != nil {
			return r.instanceFailed(ctx, lease, row, err)
		}
		return settle(r.write(ctx, lease, func(w *writer) error { return w.deletedInstance(row) }))
	}
	if row.MachineID != "" {
		return reconcile.Result{}, nil
	}
	spec := provider.MachineSpec{Name: name, Region: row.Region, Image: r.opts.Image}
	if row.SubnetID != "" {
		sn, err := store.GetSubnet(ctx, q, row.SubnetID)
		if err != nil {
			return reconcile.Result{}, fmt.Errorf("vps: subnet of instance %s: %w", row.ID, err)
		}
		if sn.State != "ready" || sn.ProviderID == "" {
			return reconcile.Result{RequeueAfter: r.opts.DependencyPoll}, nil
		}
		spec.NetworkID = sn.ProviderID
	}
	if spec.Size, err = r.flavorSize(ctx, row); err != nil {
		return r.instanceFailed(ctx, lease, row, err)
	}
	m, err := machines.FindByName(ctx, name)
	if errors.Is(err, provider.ErrNotFound) {
		// Droplet names need not be unique: the fence before the create is what keeps a paused
		// replica from making a second one.
		err = r.fencedCreate(ctx, lease, nil, func(ctx context.Context) error {
			m, err = machines.Create(ctx, spec)
			return err
		})
	}
	if err != nil {
		return r.instanceFailed(ctx, lease, row, err)
	}
	return settle(r.write(ctx, lease, func(w *writer) error { return w.instanceMachine(row, m.ID) }))
}

// flavorSize reads the provider size of the instance's flavor from its pool's policy.
func (r *Reconciler) flavorSize(ctx context.Context, row store.Instance) (string, error) {
	pool, err := store.GetPool(ctx, r.opts.DB.Q(), row.PoolID)
	if err != nil {
		return "", fmt.Errorf("vps: pool of instance %s: %w", row.ID, err)
	}
	policy := &v1.PoolPolicy{}
	if err := protojson.Unmarshal(pool.Policy, policy); err != nil {
		return "", fmt.Errorf("vps: policy of pool %s: %w", pool.ID, err)
	}
	for _, f := range policy.GetFlavors() {
		if f.GetName() == row.Flavor && f.GetSize() != "" {
			return f.GetSize(), nil
		}
	}
	return "", fmt.Errorf("vps: pool %s offers no flavor %q: %w", pool.ID, row.Flavor, provider.ErrInvalid)
}

// instanceFailed records a refusal that will not heal as the instance's error; other failures
// are returned for the runner to retry.
func (r *Reconciler) instanceFailed(ctx context.Context, lease store.Lease, row store.Instance, cause error) (reconcile.Result, error) {
	if !terminal(cause) || reconcile.LeaseLost(ctx) {
		return reconcile.Result{}, cause
	}
	return settle(r.write(ctx, lease, func(w *writer) error {
		cur, err := store.GetInstanceForUpdate(w.ctx, w.tx, row.ID)
		if err != nil {
			return err
		}
		if cur.State != row.State {
			return errRowChanged
		}
		return store.SetInstanceState(w.ctx, w.tx, row.ID, "error", "", cause.Error())
	}))
}

// instanceMachine records the machine; the instance is running unless a delete came meanwhile
// (then it stays deleting and its next pass deletes the machine). The load balancers that
// reach it are queued so they add it now rather than at the next periodic pass.
func (w *writer) instanceMachine(read store.Instance, machineID string) error {
	cur, err := store.GetInstanceForUpdate(w.ctx, w.tx, read.ID)
	if err != nil {
		return err
	}
	state := "running"
	if cur.State == "deleting" || cur.State == "deleted" {
		state = cur.State
	}
	if err := store.SetInstanceState(w.ctx, w.tx, cur.ID, state, machineID, ""); err != nil {
		return err
	}
	if state != "running" {
		return nil
	}
	lbs, err := store.LoadBalancersReaching(w.ctx, w.tx, cur)
	if err != nil {
		return err
	}
	return w.enqueueAll(lbs)
}

// deletedInstance records the instance deleted and refunds its quota, once.
func (w *writer) deletedInstance(read store.Instance) error {
	cur, err := store.GetInstanceForUpdate(w.ctx, w.tx, read.ID)
	if err != nil {
		return err
	}
	if cur.State != "deleting" {
		return errRowChanged
	}
	if err := store.SetInstanceState(w.ctx, w.tx, cur.ID, "deleted", "", ""); err != nil {
		return err
	}
	return store.RefundQuota(w.ctx, w.tx, cur.PoolID, cur.TenantID, quotaInstances)
}

// deleteByName deletes the resource with the recorded id (if any), then any left under its
// deterministic name (a lost create's), so nothing of it stays at the provider.
func deleteByName(ctx context.Context, id, name string, del func(context.Context, string) error,
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

// findID adapts a FindByName to return the id alone.
func findID[T any](find func(context.Context, string) (*T, error), id func(*T) string) func(context.Context, string) (string, error) {
	return func(ctx context.Context, name string) (string, error) {
		v, err := find(ctx, name)
		if err != nil {
			return "", err
		}
		return id(v), nil
	}
}
