package substrates

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"better-compute.dev/compute/provider"
	"better-compute.dev/compute/reconcile"
	"better-compute.dev/compute/reconcile/substrates/k8sapply"
	"better-compute.dev/compute/store"
)

// teardown deletes what the substrate made for the policy it last acted on: the cluster when we
// created it (its node pools and objects go with it), or, on an adopted cluster, our objects
// and our node pools only, leaving the cluster as the tenant had it. Then the substrate is
// deleted (no substrate wanted) or starts over for the new policy.
func (p *pass) teardown(ctx context.Context) (reconcile.Result, error) {
	if p.sub.State != "deleting" {
		p.sub.State = "deleting"
		if err := p.save(ctx, nil); err != nil {
			return reconcile.Result{}, err
		}
	}
	if p.sub.Mode != "" {
		if err := p.removeAtProvider(ctx); err != nil {
			return p.failed(ctx, err)
		}
	}
	s := &p.sub
	s.Mode, s.AccountID, s.ClusterID, s.ClusterCreated, s.CreatePendingAt = "", "", "", false, nil
	s.NodePools, s.Objects, s.Conflicts, s.LastError = nil, nil, nil, ""
	s.State = "deleted"
	if p.want != nil {
		s.State = "pending"
	}
	err := p.save(ctx, func(tx pgx.Tx) error {
		if _, err := store.PruneSubstrateNodes(ctx, tx, s.ID, nil); err != nil {
			return err
		}
		if p.want != nil {
			// The new policy's setup runs as the next pass, on a clean record.
			return store.Enqueue(ctx, tx, Kind, p.pool.ID, nil)
		}
		return nil
	})
	return reconcile.Result{}, err
}

// removeAtProvider deletes what we made on the recorded cluster.
func (p *pass) removeAtProvider(ctx context.Context) error {
	k, err := p.r.clustersFor(ctx, p.sub.AccountID)
	if err != nil {
		return err
	}
	clusterID, created := p.sub.ClusterID, p.sub.ClusterCreated
	if clusterID == "" && p.sub.Mode == modeCreate && p.sub.CreatePendingAt != nil {
		// A create may have gone out without its answer being recorded: find it by name.
		c, err := k.FindByName(ctx, ClusterName(p.pool.ID))
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
