package digitalocean

import (
	"context"

	"github.com/digitalocean/godo"

	"better-compute.dev/compute/provider"
)

// clusters is provider.Clusters on /v2/kubernetes/clusters (DOKS).
type clusters struct{ p *client }

var _ provider.KubernetesProvider = (*client)(nil)

// Clusters returns the managed Kubernetes client (provider.KubernetesProvider).
func (p *client) Clusters() provider.Clusters { return clusters{p} }

func fromCluster(c *godo.KubernetesCluster) *provider.Cluster {
	out := &provider.Cluster{ID: c.ID, Name: c.Name, Region: c.RegionSlug, Version: c.VersionSlug, Endpoint: c.Endpoint,
		Status: provider.ClusterProvisioning}
	if c.Status != nil && c.Status.State != "" && c.Status.State != godo.KubernetesClusterStatusInvalid {
		out.Status = provider.ClusterStatus(c.Status.State)
	}
	for _, np := range c.NodePools {
		if np != nil {
			out.NodePools = append(out.NodePools, *fromNodePool(np))
		}
	}
	return out
}

func fromNodePool(np *godo.KubernetesNodePool) *provider.NodePool {
	out := &provider.NodePool{ID: np.ID, Name: np.Name, Size: np.Size, Count: np.Count, Labels: np.Labels}
	for _, n := range np.Nodes {
		if n == nil {
			continue
		}
		node := provider.ClusterNode{ID: n.ID, Name: n.Name, MachineID: n.DropletID}
		if n.Status != nil {
			node.Status = n.Status.State
		}
		out.Nodes = append(out.Nodes, node)
	}
	return out
}

func nodePoolRequest(spec provider.NodePoolSpec) *godo.KubernetesNodePoolCreateRequest {
	return &godo.KubernetesNodePoolCreateRequest{Name: spec.Name, Size: spec.Size, Count: spec.Count, Labels: spec.Labels, Tags: spec.Tags}
}

func (k clusters) Get(ctx context.Context, id string) (*provider.Cluster, error) {
	const op = "get cluster"
	if !validID(id) {
		return nil, k.p.invalid(op, "malformed id %q", id)
	}
	c, _, err := k.p.godo.Kubernetes.Get(ctx, id)
	if err != nil {
		return nil, k.p.fail(op+" "+id, err)
	}
	return fromCluster(c), nil
}

// FindByName pages through the clusters (the API has no name filter for them).
func (k clusters) FindByName(ctx context.Context, name string) (*provider.Cluster, error) {
	const op = "find cluster by name"
	if name == "" {
		return nil, k.p.invalid(op, "empty name")
	}
	c, found, err := findPaged(ctx, k.p.pageSize, k.p.godo.Kubernetes.List,
		func(c *godo.KubernetesCluster) bool { return c != nil && c.Name == name })
	if err != nil {
		return nil, k.p.fail(op, err)
	}
	if !found {
		return nil, k.p.wrap("digitalocean: "+op+": no cluster named "+name+": "+provider.ErrNotFound.Error(), provider.ErrNotFound)
	}
	return fromCluster(c), nil
}

// Create sends one POST (godo's retries are off: see the package comment); the cluster comes
// back provisioning.
func (k clusters) Create(ctx context.Context, spec provider.ClusterSpec) (*provider.Cluster, error) {
	const op = "create cluster"
	if len(spec.NodePools) == 0 {
		return nil, k.p.invalid(op, "cluster %s needs at least one node pool", spec.Name)
	}
	req := &godo.KubernetesClusterCreateRequest{Name: spec.Name, RegionSlug: spec.Region, VersionSlug: spec.Version, Tags: spec.Tags}
	if req.VersionSlug == "" {
		req.VersionSlug = "latest"
	}
	for _, np := range spec.NodePools {
		req.NodePools = append(req.NodePools, nodePoolRequest(np))
	}
	c, _, err := k.p.godo.Kubernetes.Create(ctx, req)
	if err != nil {
		return nil, k.p.fail(op+" "+spec.Name, err)
	}
	return fromCluster(c), nil
}

// Delete removes the cluster and its node pools; associated load balancers and volumes are
// left as the API leaves them.
func (k clusters) Delete(ctx context.Context, id string) error {
	const op = "delete cluster"
	if !validID(id) {
		return k.p.invalid(op, "malformed id %q", id)
	}
	_, err := k.p.godo.Kubernetes.Delete(ctx, id)
	return ignoreNotFound(k.p.fail(op+" "+id, err))
}

// NodePools lists one page of the largest size: godo does not hand back the links of this
// list, and a cluster has far fewer node pools than a page holds.
func (k clusters) NodePools(ctx context.Context, clusterID string) ([]provider.NodePool, error) {
	const op = "list node pools"
	if !validID(clusterID) {
		return nil, k.p.invalid(op, "malformed cluster id %q", clusterID)
	}
	nps, _, err := k.p.godo.Kubernetes.ListNodePools(ctx, clusterID, &godo.ListOptions{Page: 1, PerPage: k.p.pageSize})
	if err != nil {
		return nil, k.p.fail(op+" of "+clusterID, err)
	}
	out := make([]provider.NodePool, 0, len(nps))
	for _, np := range nps {
		if np != nil {
			out = append(out, *fromNodePool(np))
		}
	}
	return out, nil
}

func (k clusters) CreateNodePool(ctx context.Context, clusterID string, spec provider.NodePoolSpec) (*provider.NodePool, error) {
	const op = "create node pool"
	if !validID(clusterID) {
		return nil, k.p.invalid(op, "malformed cluster id %q", clusterID)
	}
	np, _, err := k.p.godo.Kubernetes.CreateNodePool(ctx, clusterID, nodePoolRequest(spec))
	if err != nil {
		return nil, k.p.fail(op+" "+spec.Name, err)
	}
	return fromNodePool(np), nil
}

func (k clusters) ResizeNodePool(ctx context.Context, clusterID, poolID string, count int) (*provider.NodePool, error) {
	const op = "resize node pool"
	if !validID(clusterID) || !validID(poolID) {
		return nil, k.p.invalid(op, "malformed id %q/%q", clusterID, poolID)
	}
	// The API wants the name with every update; read it first.
	cur, _, err := k.p.godo.Kubernetes.GetNodePool(ctx, clusterID, poolID)
	if err != nil {
		return nil, k.p.fail(op+" "+poolID, err)
	}
	np, _, err := k.p.godo.Kubernetes.UpdateNodePool(ctx, clusterID, poolID, &godo.KubernetesNodePoolUpdateRequest{Name: cur.Name, Count: &count})
	if err != nil {
		return nil, k.p.fail(op+" "+poolID, err)
	}
	return fromNodePool(np), nil
}

func (k clusters) DeleteNodePool(ctx context.Context, clusterID, poolID string) error {
	const op = "delete node pool"
	if !validID(clusterID) || !validID(poolID) {
		return k.p.invalid(op, "malformed id %q/%q", clusterID, poolID)
	}
	_, err := k.p.godo.Kubernetes.DeleteNodePool(ctx, clusterID, poolID)
	return ignoreNotFound(k.p.fail(op+" "+poolID, err))
}

// Kubeconfig returns the cluster's kubeconfig document. Its bytes are a credential: they are
// never part of an error.
func (k clusters) Kubeconfig(ctx context.Context, clusterID string) ([]byte, error) {
	const op = "get kubeconfig"
	if !validID(clusterID) {
		return nil, k.p.invalid(op, "malformed cluster id %q", clusterID)
	}
	cfg, _, err := k.p.godo.Kubernetes.GetKubeConfig(ctx, clusterID, nil)
	if err != nil {
		return nil, k.p.fail(op+" of "+clusterID, err)
	}
	return cfg.KubeconfigYAML, nil
}
