package substrates

import (
	"context"
	"fmt"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"better-compute.dev/compute/reconcile/substrates/k8sapply"
)

// KubeClients turns a cluster's kubeconfig into a client of its Kubernetes API. Tests inject
// k8sfake's field-managed fake clusters; production uses KubeconfigClients.
type KubeClients interface {
	ForCluster(ctx context.Context, clusterID string, kubeconfig []byte) (k8sapply.Cluster, error)
}

// DefaultKubeTimeout bounds one request to a cluster's API server.
const DefaultKubeTimeout = 20 * time.Second

// KubeconfigClients builds a real client from the kubeconfig the provider hands out.
type KubeconfigClients struct {
	// Timeout bounds one request (default DefaultKubeTimeout).
	Timeout time.Duration
}

// ForCluster parses the kubeconfig and builds the clients of the groups the reconciler uses. A parse error is not wrapped: it can
// quote the document, credential included.
func (k KubeconfigClients) ForCluster(_ context.Context, clusterID string, kubeconfig []byte) (k8sapply.Cluster, error) {
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("substrates: cluster %s: the kubeconfig is not usable", clusterID)
	}
	cfg.Timeout = k.Timeout
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultKubeTimeout
	}
	cs, err := k8sapply.NewClients(cfg)
	if err != nil {
		return nil, fmt.Errorf("substrates: cluster %s: kubernetes client: %w", clusterID, err)
	}
	return cs, nil
}
