package provider

import "context"

// This file is the seam for managed Kubernetes, kept beside ProviderImpl rather than inside it:
// a provider that offers managed clusters also implements KubernetesProvider, and the
// kubernetes.substrates reconciler asserts it. Like the rest of the contract, every method is
// idempotent and non-blocking: a cluster is made "provisioning" and observed "running" later.

// KubernetesProvider is the optional interface of a Provider that offers managed Kubernetes.
type KubernetesProvider interface {
	Clusters() Clusters
}

// ClusterStatus is a managed cluster's state as the provider reports it.
type ClusterStatus string

// Cluster states (DigitalOcean's words).
const (
	ClusterProvisioning ClusterStatus = "provisioning"
	ClusterRunning      ClusterStatus = "running"
	ClusterDegraded     ClusterStatus = "degraded"
	ClusterError        ClusterStatus = "error"
	ClusterDeleted      ClusterStatus = "deleted"
	ClusterUpgrading    ClusterStatus = "upgrading"
)

// NodePoolSpec is a node pool to make: a fixed count of nodes of one size.
type NodePoolSpec struct {
	Name   string // unique within the cluster; the adoption key after a lost create
	Size   string // provider size slug
	Count  int    // at least 1
	Labels map[string]string
	Tags   []string
}

// ClusterSpec is a cluster to make, with its first node pools (at least one).
type ClusterSpec struct {
	Name      string // deterministic provider-side name: the adoption key
	Region    string
	Version   string // empty: the provider's default
	NodePools []NodePoolSpec
	Tags      []string
}

// ClusterNode is one node of a node pool.
type ClusterNode struct {
	ID        string // the provider's node id
	Name      string // the Kubernetes node name
	Status    string // provisioning, running, ...
	MachineID string // the underlying machine (droplet) id, once known
}

// NodePool is an observed node pool.
type NodePool struct {
	ID     string
	Name   string
	Size   string
	Count  int
	Labels map[string]string
	Nodes  []ClusterNode
}

// Cluster is an observed managed cluster.
type Cluster struct {
	ID        string
	Name      string
	Region    string
	Version   string
	Status    ClusterStatus
	Endpoint  string
	NodePools []NodePool
}

// Clusters is the managed-Kubernetes family: clusters, their node pools and credentials.
type Clusters interface {
	Get(ctx context.Context, id string) (*Cluster, error)
	// FindByName returns the cluster with that exact name, or ErrNotFound; used to adopt what a
	// replica that died mid-create made.
	FindByName(ctx context.Context, name string) (*Cluster, error)
	Create(ctx context.Context, spec ClusterSpec) (*Cluster, error)
	// Delete is idempotent: deleting what is gone returns nil.
	Delete(ctx context.Context, id string) error

	NodePools(ctx context.Context, clusterID string) ([]NodePool, error)
	CreateNodePool(ctx context.Context, clusterID string, spec NodePoolSpec) (*NodePool, error)
	// ResizeNodePool sets a node pool's node count.
	ResizeNodePool(ctx context.Context, clusterID, poolID string, count int) (*NodePool, error)
	// DeleteNodePool is idempotent.
	DeleteNodePool(ctx context.Context, clusterID, poolID string) error

	// Kubeconfig returns a kubeconfig document for the cluster's API server. It holds a
	// credential: never log it, store it or put it in an error.
	Kubeconfig(ctx context.Context, clusterID string) ([]byte, error)
}
