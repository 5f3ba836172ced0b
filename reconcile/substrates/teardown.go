package substrates

import (
	"context"
	"errors"
	"fmt"

	"better-compute.dev/compute/provider"
	"better-compute.dev/compute/reconcile/substrates/k8sapply"
	"better-compute.dev/compute/store"
)

// Teardown deletes what the substrate made for the policy it last acted on: the cluster when we
// created it (its node pools and objects go with it), or, on an adopted cluster, our objects
// and our node pools only, leaving the cluster as the tenant had it. Then the substrate is
// deleted (no substrate wanted) or starts over for the new policy. The pass recorded the
// substrate deleting when it began (Reconciler.load).

// Delete removes what we made at the provider; a substrate that never acted made nothing.
func (p *pass) Delete(ctx context.Context, name string) error {
	if p.sub.Mode == "" {
		return nil
	}
	return p.removeAtProvider(ctx, name)
}

// Deleted records the substrate deleted, or pending for the new policy, whose setup runs as
// the next pass on a clean record.
func (p *pass) Deleted(ctx context.Context) error {
	s := &p.sub
	s.Mode, s.AccountID, s.ClusterID, s.ClusterCreated, s.CreatePendingAt = "", "", "", false, nil
	s.NodePools, s.Objects, s.Conflicts, s.LastError = nil, nil, nil, ""
	s.State = "deleted"
	if p.want != nil {
		s.State = "pending"
	}
	return p.save(ctx, func(tx store.Tx) error {
		if _, err := store.PruneSubstrateNodes(ctx, tx, s.ID, nil); err != nil {
			return err
		}
		if p.want != nil {
			return store.Enqueue(ctx, tx, Kind, p.pool.ID, nil)
		}
		return nil
	})
}

// removeAtProvider deletes what we made on the recorded cluster.
func (p *pass) removeAtProvider(ctx context.Context, name string) error {
	k, err := p.r.providers.Kubernetes(ctx, p.sub.AccountID)
	if err != nil {
		return fmt.Errorf("substrates: %w", err)
	}
	clusterID, created := p.sub.ClusterID, p.sub.ClusterCreated
	if clusterID == "" && p.sub.Mode == modeCreate && p.sub.CreatePendingAt != nil {
		// A create may have gone out without its answer being recorded: find it by name.
		c, err := k.FindByName(ctx, name)
		switch {
		case errors.Is(err, provider.ErrNotFound):
			return nil
		case err != nil:
			return err
		}
		clusterID, created = c.ID, true
	}
	if clusterID == "" {
		return nil
	}
	c, err := k.Get(ctx, clusterID)
	if errors.Is(err, provider.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if created {
		return k.Delete(ctx, clusterID)
	}
	if c.Status != provider.ClusterProvisioning {
		p.sub.ClusterID = clusterID
		if err := p.removeObjects(ctx, k); err != nil {
			return err
		}
	}
	have, err := k.NodePools(ctx, clusterID)
	if err != nil {
		return err
	}
	for _, np := range have {
		if ours(p.pool.ID, np) {
			if err := k.DeleteNodePool(ctx, clusterID, np.ID); err != nil {
				return err
			}
		}
	}
	return nil
}

// removeObjects deletes our objects from an adopted cluster, the DaemonSet first (its pods
// stop joining), then the Secret and bcd's RBAC, and the Namespace last. An object of one of our names that is not ours stays.
func (p *pass) removeObjects(ctx context.Context, k provider.Clusters) error {
	a, err := p.applier(ctx, k)
	if err != nil {
		return err
	}
	m := manifests{poolID: p.pool.ID}
	refs := []k8sapply.Ref{m.daemonSetRef(), m.secretRef(), m.clusterRoleBindingRef(), m.clusterRoleRef(), m.serviceAccountRef(), m.namespaceRef()}
	for _, ref := range refs {
		if _, _, err := a.Remove(ctx, ref); err != nil {
			return err
		}
	}
	return nil
}
