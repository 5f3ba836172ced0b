package vps

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/protobuf/encoding/protojson"

	v1 "better-compute.dev/compute/gen/go/bettercompute/compute/v1"
	"better-compute.dev/compute/lifecycle"
	"better-compute.dev/compute/provider"
	"better-compute.dev/compute/reconcile"
	"better-compute.dev/compute/reconcile/managed"
	"better-compute.dev/compute/store"
)

// instancePass makes the instance's droplet ("bc-<id>", in its subnet's VPC, of its flavor's
// size) and records it running with the machine id, or deletes the droplet of an instance
// being deleted. The load balancers that reach an instance are queued in the write that gives
// it a machine, so they add it at once. Droplet names need not be unique, so the name is looked
// up before every create; the fence before the create is what keeps a paused replica from
// making a second one.
type instancePass struct {
	managed.Base
	r   *Reconciler
	f   *managed.Fence
	row store.Instance
	p   provider.Provider

	spec provider.MachineSpec
	m    *provider.Machine
}

var _ managed.Resource = (*instancePass)(nil)

func (r *Reconciler) loadInstance(ctx context.Context, f *managed.Fence) (managed.Resource, error) {
	row, err := store.GetInstance(ctx, r.opts.DB.Q(), f.Lease.ResourceID)
	if errors.Is(err, store.ErrNotFound) || (err == nil && row.State == "deleted") {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("vps: %w", err)
	}
	return &instancePass{r: r, f: f, row: row}, nil
}

func (i *instancePass) ID() string     { return i.row.ID }
func (i *instancePass) Deleting() bool { return i.row.State == "deleting" }

func (i *instancePass) connect(ctx context.Context) (err error) {
	i.p, err = i.r.connect(ctx, i.row.AccountID)
	return err
}

// Observe: an instance with a machine is done; one without waits for its subnet's VPC and
// needs its flavor's size.
func (i *instancePass) Observe(ctx context.Context) (managed.Observation, error) {
	if err := i.connect(ctx); err != nil {
		return managed.Observation{}, err
	}
	if i.row.MachineID != "" {
		return managed.Finish(reconcile.Result{}), nil
	}
	i.spec = provider.MachineSpec{Name: managed.ProviderName(i.row.ID), Region: i.row.Region, Image: i.r.opts.Image}
	if i.row.SubnetID != "" {
		sn, err := store.GetSubnet(ctx, i.r.opts.DB.Q(), i.row.SubnetID)
		if err != nil {
			return managed.Observation{}, fmt.Errorf("vps: subnet of instance %s: %w", i.row.ID, err)
		}
		if sn.State != "ready" || sn.ProviderID == "" {
			return managed.After(i.r.opts.DependencyPoll), nil
		}
		i.spec.NetworkID = sn.ProviderID
	}
	var err error
	if i.spec.Size, err = i.r.flavorSize(ctx, i.row); err != nil {
		return managed.Observation{}, err
	}
	return managed.Observation{}, nil
}

func (i *instancePass) Adopt(ctx context.Context, name string) (managed.Observation, error) {
	m, err := i.p.Machines().FindByName(ctx, name)
	if errors.Is(err, provider.ErrNotFound) {
		return managed.Observation{}, nil
	}
	if err != nil {
		return managed.Observation{}, err
	}
	i.m = m
	return managed.Found(true), nil
}

func (i *instancePass) Create(ctx context.Context, _ string) (err error) {
	i.m, err = i.p.Machines().Create(ctx, i.spec)
	return err
}

func (i *instancePass) Record(ctx context.Context) (reconcile.Result, error) {
	return reconcile.Result{}, write(ctx, i.f, func(w *writer) error { return w.instanceMachine(i.row, i.m.ID) })
}

func (i *instancePass) Delete(ctx context.Context, name string) error {
	if err := i.connect(ctx); err != nil {
		return err
	}
	machines := i.p.Machines()
	return managed.DeleteByName(ctx, i.row.MachineID, name, machines.Delete,
		managed.FindID(machines.FindByName, func(m *provider.Machine) string { return m.ID }))
}

func (i *instancePass) Deleted(ctx context.Context) error {
	return write(ctx, i.f, func(w *writer) error { return w.deletedInstance(i.row) })
}

// Errored records a refusal that will not heal as the instance's error.
func (i *instancePass) Errored(ctx context.Context, cause error) (reconcile.Result, error) {
	return reconcile.Result{}, write(ctx, i.f, func(w *writer) error {
		cur, err := store.GetInstanceForUpdate(w.ctx, w.tx, i.row.ID)
		if err != nil {
			return err
		}
		if cur.State != i.row.State {
			return errRowChanged
		}
		return store.SetInstanceState(w.ctx, w.tx, i.row.ID, "error", "", cause.Error())
	})
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
	return lifecycle.Instance.Apply(w.ctx, w.tx, lifecycle.Deleted, lifecycle.Subject{TenantID: cur.TenantID, PoolID: cur.PoolID, ID: cur.ID}, nil)
}
