package resources

import (
	"context"
	"slices"

	"better-compute.dev/compute/contract"
	"better-compute.dev/compute/lifecycle"
	"better-compute.dev/compute/store"
)

// leaveLoadBalancer takes a deleted instance out of a load balancer in the delete's transaction
// (the seed: "deleting an instance updates its load balancers at once"): the next read no longer
// lists it in reachedInstanceIds, providerLoadBalancer.updated says the targets changed, and the
// reconciler is queued to send the provider the smaller set. A load balancer that did not reach
// the instance yet (it had no machine) has nothing to change.
func leaveLoadBalancer(ctx context.Context, tx store.Tx, id string, in store.Instance) error {
	row, err := store.GetLoadBalancerForUpdate(ctx, tx, id)
	if err != nil {
		return err
	}
	instances := slices.DeleteFunc(slices.Clone(row.ReachedInstanceIDs), func(x string) bool { return x == in.ID })
	machines := slices.DeleteFunc(slices.Clone(row.ReachedMachineIDs), func(x string) bool { return in.MachineID != "" && x == in.MachineID })
	if len(instances) == len(row.ReachedInstanceIDs) && len(machines) == len(row.ReachedMachineIDs) {
		return nil
	}
	state := row.State
	if state == "ready" || state == "error" {
		state = "updating"
	}
	if row, err = store.SetLoadBalancerReach(ctx, tx, id, state, instances, machines); err != nil {
		return err
	}
	if err := lifecycle.LoadBalancer.Apply(ctx, tx, lifecycle.Update, lifecycle.Subject{TenantID: row.TenantID, PoolID: row.PoolID, ID: row.ID}, map[string]any{"changed": []any{"targets"}, "removedInstanceId": in.ID}); err != nil {
		return err
	}
	return store.Enqueue(ctx, tx, contract.VPSKind, id, nil)
}
