package substrates

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"better-compute.dev/compute/provider"
	"better-compute.dev/compute/reconcile"
	"better-compute.dev/compute/reconcile/substrates/k8sapply"
	"better-compute.dev/compute/store"
)

// setup converges a substrate onto what the policy asks for: the cluster, the flavors' node
// pools, then the objects in the cluster.
func (p *pass) setup(ctx context.Context) (reconcile.Result, error) {
	k, err := p.r.clustersFor(ctx, p.want.accountID)
	if err != nil {
		return p.failed(ctx, err)
	}
	if p.sub.State != "provisioning" && p.sub.State != "ready" {
		p.sub.State, p.sub.LastError = "provisioning", ""
	}
	p.sub.AccountID, p.sub.Mode = p.want.accountID, p.want.mode
	cluster, res, err := p.ensureCluster(ctx, k)
	if cluster == nil {
		return res, err
	}
	if cluster.Status == provider.ClusterProvisioning {
		p.sub.State = "provisioning"
		if err := p.save(ctx, nil); err != nil {
			return reconcile.Result{}, err
		}
		return reconcile.Result{RequeueAfter: p.r.opts.ProviderPoll}, nil
	}
	nodeIDs, err := p.ensureNodePools(ctx, k)
	if err != nil {
		return p.failed(ctx, err)
	}
	blocked, err := p.applyObjects(ctx, k)
	if err != nil {
		return p.failed(ctx, err)
	}
	p.sub.State, p.sub.LastError = "ready", ""
	if blocked != "" {
		// bcd cannot run, so no node can join: the substrate is not ready until the names are
		// freed (the resync looks again).
		p.sub.State, p.sub.LastError = "error", blocked
	}
	err = p.save(ctx, func(tx pgx.Tx) error {
		// A joined node that none of our node pools has (gone, or never ours) leaves the pool.
		_, err := store.PruneSubstrateNodes(ctx, tx, p.sub.ID, nodeIDs)
		return err
	})
	if err != nil {
		return reconcile.Result{}, err
	}
	return reconcile.Result{RequeueAfter: p.r.opts.Resync}, nil
}

// ensureCluster finds, adopts or creates the cluster. A nil cluster means the pass ends with
// the returned result.
func (p *pass) ensureCluster(ctx context.Context, k provider.Clusters) (*provider.Cluster, reconcile.Result, error) {
	if p.want.mode == modeAdopt {
		c, err := k.Get(ctx, p.want.adoptID)
		if errors.Is(err, provider.ErrNotFound) {
			res, err := p.terminal(ctx, fmt.Sprintf("cluster %s is not on account %s", p.want.adoptID, p.want.accountID))
			return nil, res, err
		}
		if err != nil {
			res, err := p.failed(ctx, err)
			return nil, res, err
		}
		p.sub.ClusterID, p.sub.ClusterCreated = c.ID, false
		return c, reconcile.Result{}, nil
	}
	if p.sub.ClusterID != "" {
		c, err := k.Get(ctx, p.sub.ClusterID)
		switch {
		case err == nil:
			return c, reconcile.Result{}, nil
		case !errors.Is(err, provider.ErrNotFound):
			res, err := p.failed(ctx, err)
			return nil, res, err
		}
		// The cluster we made is gone (deleted at the provider): make it again.
		p.sub.ClusterID, p.sub.NodePools, p.sub.Objects = "", nil, nil
	}
	name := ClusterName(p.pool.ID)
	c, err := k.FindByName(ctx, name)
	if err == nil {
		// Ours by its name: made by an earlier pass whose record was lost.
		p.sub.ClusterID, p.sub.ClusterCreated = c.ID, true
		return c, reconcile.Result{}, nil
	}
	if !errors.Is(err, provider.ErrNotFound) {
		res, err := p.failed(ctx, err)
		return nil, res, err
	}
	if len(p.want.pools) == 0 {
		res, err := p.terminal(ctx, "a cluster to create needs a flavor with a count of at least 1")
		return nil, res, err
	}
	// The durable create-pending mark comes first: a replica that dies after the request finds
	// the mark's cluster by name instead of making a second one.
	err = reconcile.WriteResult(ctx, p.r.opts.DB, p.lease, func(tx pgx.Tx) error {
		return store.MarkSubstrateCreatePending(ctx, tx, p.sub.ID, p.want.accountID)
	})
	if err != nil {
		return nil, reconcile.Result{}, fmt.Errorf("substrates: mark %s create-pending: %w", p.sub.ID, err)
	}
	marked := time.Now()
	p.sub.CreatePendingAt = &marked
	spec := provider.ClusterSpec{Name: name, Region: p.want.region, Version: p.want.version}
	for _, np := range p.want.pools {
		spec.NodePools = append(spec.NodePools, nodePoolSpec(p.pool.ID, np))
	}
	createCtx, cancel := context.WithTimeout(ctx, p.r.opts.CreateWindow)
	defer cancel()
	c, err = k.Create(createCtx, spec)
	if errors.Is(err, provider.ErrInvalid) {
		res, err := p.terminal(ctx, err.Error())
		return nil, res, err
	}
	if err != nil {
		res, err := p.failed(ctx, err)
		return nil, res, err
	}
	p.sub.ClusterID, p.sub.ClusterCreated = c.ID, true
	if err := p.save(ctx, nil); err != nil {
		return nil, reconcile.Result{}, err
	}
	return c, reconcile.Result{}, nil
}

// ensureNodePools makes the cluster's node pools match the flavors: one bc-<pool>-<flavor> pool
// each (adopted by name when it exists), resized to the flavor's count, and ours that no flavor
// wants any more deleted. A node pool whose size differs is deleted and made again on a later
// pass (the provider cannot resize a node's machine). Pools without our prefix are never
// touched. It returns the node and machine ids of our pools, for pruning joined nodes.
func (p *pass) ensureNodePools(ctx context.Context, k provider.Clusters) ([]string, error) {
	clusterID := p.sub.ClusterID
	have, err := k.NodePools(ctx, clusterID)
	if err != nil {
		return nil, err
	}
	var kept []store.SubstrateNodePool
	var nodeIDs []string
	for _, want := range p.want.pools {
		i := slices.IndexFunc(have, func(np provider.NodePool) bool { return np.Name == want.Name })
		var got *provider.NodePool
		switch {
		case i < 0:
			if got, err = k.CreateNodePool(ctx, clusterID, nodePoolSpec(p.pool.ID, want)); err != nil {
				return nil, err
			}
		case have[i].Size != want.Size:
			if err := k.DeleteNodePool(ctx, clusterID, have[i].ID); err != nil {
				return nil, err
			}
			continue
		case have[i].Count != want.Count:
			if got, err = k.ResizeNodePool(ctx, clusterID, have[i].ID, want.Count); err != nil {
				return nil, err
			}
		default:
			got = &have[i]
		}
		want.ProviderID = got.ID
		kept = append(kept, want)
		for _, n := range got.Nodes {
			nodeIDs = append(nodeIDs, n.ID, n.MachineID)
		}
	}
	for _, np := range have {
		wanted := slices.ContainsFunc(p.want.pools, func(w store.SubstrateNodePool) bool { return w.Name == np.Name })
		if ours(p.pool.ID, np) && !wanted {
			if err := k.DeleteNodePool(ctx, clusterID, np.ID); err != nil {
				return nil, err
			}
		}
	}
	p.sub.NodePools = kept
	return nodeIDs, nil
}

// applyObjects applies the pool's objects into the cluster and records which were applied and
// which names are taken by objects we did not create. Nothing is written into a namespace of
// our name that is not ours, and the DaemonSet is not applied when its service account, node
// reader role and binding, or join Secret are not ours (bcd would run as, or read, another
// party's). blocked says why bcd cannot run, "" when it can.
func (p *pass) applyObjects(ctx context.Context, k provider.Clusters) (blocked string, err error) {
	a, err := p.applier(ctx, k)
	if err != nil {
		return "", err
	}
	token, err := p.r.opts.Keyring.OpenSecret(string(p.sub.JoinTokenSealed), []byte(p.sub.ID))
	if err != nil {
		return "", fmt.Errorf("substrates: %s: open join token: %w", p.sub.ID, err)
	}
	m := manifests{poolID: p.pool.ID, joinURL: p.r.opts.JoinURL, image: p.r.opts.BcdImage}
	p.sub.Objects, p.sub.Conflicts = nil, nil
	record := func(out k8sapply.Outcome) {
		if out.Applied {
			p.sub.Objects = append(p.sub.Objects, store.SubstrateObject{Kind: out.Ref.Kind, Namespace: out.Ref.Namespace, Name: out.Ref.Name, UID: out.UID})
		} else {
			p.sub.Conflicts = append(p.sub.Conflicts, store.SubstrateConflict{Kind: out.Ref.Kind, Namespace: out.Ref.Namespace, Name: out.Ref.Name, Reason: out.Conflict})
		}
	}
	// skip reports the refs left unwritten because what they depend on is not ours.
	skip := func(why string, refs ...k8sapply.Ref) {
		for _, ref := range refs {
			record(k8sapply.Outcome{Ref: ref, Conflict: "not applied: " + why})
		}
	}
	ns, err := a.Namespace(ctx, m.namespace())
	if err != nil {
		return "", err
	}
	record(ns)
	if !ns.Applied {
		why := fmt.Sprintf("namespace %s is not ours", ns.Ref.Name)
		skip(why, m.serviceAccountRef(), m.clusterRoleRef(), m.clusterRoleBindingRef(), m.secretRef(), m.daemonSetRef())
		return "bcd cannot run: " + why + " (" + ns.Conflict + ")", nil
	}
	// What bcd's pods depend on: its identity, its right to read its Node, its join Secret.
	// bcd runs only when all of them are ours.
	var notOurs []string
	for _, apply := range []func() (k8sapply.Outcome, error){
		func() (k8sapply.Outcome, error) { return a.ServiceAccount(ctx, m.serviceAccount()) },
		func() (k8sapply.Outcome, error) { return a.ClusterRole(ctx, m.clusterRole()) },
		func() (k8sapply.Outcome, error) { return a.ClusterRoleBinding(ctx, m.clusterRoleBinding()) },
		func() (k8sapply.Outcome, error) { return a.Secret(ctx, m.secret(token.Reveal())) },
	} {
		out, err := apply()
		if err != nil {
			return "", err
		}
		record(out)
		if !out.Applied {
			notOurs = append(notOurs, out.Ref.String()+" ("+out.Conflict+")")
		}
	}
	if len(notOurs) > 0 {
		why := strings.Join(notOurs, ", ") + " not ours"
		skip(why, m.daemonSetRef())
		return "bcd cannot run: " + why, nil
	}
	ds, err := a.DaemonSet(ctx, m.daemonSet())
	if err != nil {
		return "", err
	}
	record(ds)
	if !ds.Applied {
		return fmt.Sprintf("bcd cannot run: %s is not ours (%s)", ds.Ref, ds.Conflict), nil
	}
	return "", nil
}

// applier opens the cluster's Kubernetes API with its kubeconfig.
func (p *pass) applier(ctx context.Context, k provider.Clusters) (k8sapply.Applier, error) {
	kubeconfig, err := k.Kubeconfig(ctx, p.sub.ClusterID)
	if err != nil {
		return k8sapply.Applier{}, err
	}
	cs, err := p.r.opts.Kube.ForCluster(ctx, p.sub.ClusterID, kubeconfig)
	if err != nil {
		return k8sapply.Applier{}, err
	}
	return k8sapply.Applier{Client: cs, PoolID: p.pool.ID}, nil
}
