package substrates

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"better-compute.dev/compute/provider"
	"better-compute.dev/compute/reconcile"
	"better-compute.dev/compute/reconcile/managed"
	"better-compute.dev/compute/reconcile/substrates/k8sapply"
	"better-compute.dev/compute/store"
)

// The cluster as a managed.Resource. Setup converges the substrate onto what the policy asks
// for: the cluster (observed, adopted by name, or created), then, as its update, the flavors'
// node pools and the objects in the cluster.

var _ managed.Resource = (*pass)(nil)

// ID is the pool's id: the cluster's provider-side name is bc-<pool id>.
func (p *pass) ID() string { return p.pool.ID }

// Deleting says the pass tears down (see teardown.go).
func (p *pass) Deleting() bool { return p.tearing }

// Observe opens the account's clusters and reads the cluster the substrate stands for: the
// tenant's (adopt mode; one missing is the substrate's error), or the one we recorded making
// (gone at the provider: it is made again).
func (p *pass) Observe(ctx context.Context) (managed.Observation, error) {
	k, err := p.r.providers.Kubernetes(ctx, p.want.accountID)
	if err != nil {
		return managed.Observation{}, fmt.Errorf("substrates: %w", err)
	}
	p.k = k
	if p.sub.State != "provisioning" && p.sub.State != "ready" {
		p.sub.State, p.sub.LastError = "provisioning", ""
	}
	p.sub.AccountID, p.sub.Mode = p.want.accountID, p.want.mode
	if p.want.mode == modeAdopt {
		c, err := k.Get(ctx, p.want.adoptID)
		if errors.Is(err, provider.ErrNotFound) {
			return managed.End(p.terminal(ctx, fmt.Sprintf("cluster %s is not on account %s", p.want.adoptID, p.want.accountID)))
		}
		if err != nil {
			return managed.Observation{}, err
		}
		p.sub.ClusterID, p.sub.ClusterCreated, p.cluster = c.ID, false, c
		return managed.Found(false), nil
	}
	if p.sub.ClusterID != "" {
		c, err := k.Get(ctx, p.sub.ClusterID)
		switch {
		case err == nil:
			p.cluster = c
			return managed.Found(false), nil
		case !errors.Is(err, provider.ErrNotFound):
			return managed.Observation{}, err
		}
		// The cluster we made is gone (deleted at the provider): make it again.
		p.sub.ClusterID, p.sub.NodePools, p.sub.Objects = "", nil, nil
	}
	return managed.Observation{}, nil
}

// CreatePending: a cluster of our name is looked for before every create.
func (p *pass) CreatePending() bool { return true }

// Adopt takes a cluster of our name as ours: made by an earlier pass whose record was lost.
func (p *pass) Adopt(ctx context.Context, name string) (managed.Observation, error) {
	c, err := p.k.FindByName(ctx, name)
	if errors.Is(err, provider.ErrNotFound) {
		return managed.Observation{}, nil
	}
	if err != nil {
		return managed.Observation{}, err
	}
	p.sub.ClusterID, p.sub.ClusterCreated, p.cluster = c.ID, true, c
	return managed.Found(false), nil
}

// Prepare builds the cluster with one node pool per flavor; a policy with no nodes cannot make one.
func (p *pass) Prepare(ctx context.Context, name string) (managed.Observation, error) {
	if len(p.want.pools) == 0 {
		return managed.End(p.terminal(ctx, "a cluster to create needs a flavor with a count of at least 1"))
	}
	p.spec = provider.ClusterSpec{Name: name, Region: p.want.region, Version: p.want.version}
	for _, np := range p.want.pools {
		p.spec.NodePools = append(p.spec.NodePools, nodePoolSpec(p.pool.ID, np))
	}
	return managed.Observation{}, nil
}

// MarkCreatePending is the durable mark: a replica that dies after the request finds the
// mark's cluster by name instead of making a second one.
func (p *pass) MarkCreatePending(ctx context.Context, tx store.Tx) error {
	if err := store.MarkSubstrateCreatePending(ctx, tx, p.sub.ID, p.want.accountID); err != nil {
		return fmt.Errorf("substrates: mark %s create-pending: %w", p.sub.ID, err)
	}
	marked := time.Now()
	p.sub.CreatePendingAt = &marked
	return nil
}

func (p *pass) Create(ctx context.Context, _ string) (err error) {
	p.cluster, err = p.k.Create(ctx, p.spec)
	return err
}

// Created records the new cluster at once.
func (p *pass) Created(ctx context.Context) (managed.Observation, error) {
	p.sub.ClusterID, p.sub.ClusterCreated = p.cluster.ID, true
	if err := p.save(ctx, nil); err != nil {
		return managed.End(reconcile.Result{}, err)
	}
	return managed.Found(false), nil
}

// Update waits for a provisioning cluster, then converges its node pools and objects.
func (p *pass) Update(ctx context.Context) (managed.Observation, error) {
	if p.cluster.Status == provider.ClusterProvisioning {
		p.sub.State = "provisioning"
		return managed.End(reconcile.Result{RequeueAfter: p.r.opts.ProviderPoll}, p.save(ctx, nil))
	}
	var err error
	if p.nodeIDs, err = p.ensureNodePools(ctx, p.k); err != nil {
		return managed.Observation{}, err
	}
	if p.blocked, err = p.applyObjects(ctx, p.k); err != nil {
		return managed.Observation{}, err
	}
	return managed.Found(true), nil
}

// Record writes the substrate ready, or in error when bcd cannot run (then no node can join:
// the substrate is not ready until the names are freed, and the resync looks again). A joined
// node that none of our node pools has (gone, or never ours) leaves the pool.
func (p *pass) Record(ctx context.Context) (reconcile.Result, error) {
	p.sub.State, p.sub.LastError = "ready", ""
	if p.blocked != "" {
		p.sub.State, p.sub.LastError = "error", p.blocked
	}
	err := p.save(ctx, func(tx store.Tx) error {
		_, err := store.PruneSubstrateNodes(ctx, tx, p.sub.ID, p.nodeIDs)
		return err
	})
	if err != nil {
		return reconcile.Result{}, err
	}
	// A node pool whose nodes are still coming up is looked at again soon, for its ready event.
	if slices.ContainsFunc(p.sub.NodePools, func(np store.SubstrateNodePool) bool { return !np.Ready }) {
		return reconcile.Result{RequeueAfter: p.r.opts.ProviderPoll}, nil
	}
	return reconcile.Result{RequeueAfter: p.r.opts.Resync}, nil
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
				p.failedPool = &want
				return nil, err
			}
		case have[i].Size != want.Size:
			if err := k.DeleteNodePool(ctx, clusterID, have[i].ID); err != nil {
				return nil, err
			}
			continue
		case have[i].Count != want.Count:
			if got, err = k.ResizeNodePool(ctx, clusterID, have[i].ID, want.Count); err != nil {
				p.failedPool = &want
				return nil, err
			}
		default:
			got = &have[i]
		}
		want.ProviderID = got.ID
		want.Ready = len(got.Nodes) >= want.Count && !slices.ContainsFunc(got.Nodes, func(n provider.ClusterNode) bool { return n.Status != "running" })
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
