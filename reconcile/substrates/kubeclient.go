package substrates

import (
	"context"
	"fmt"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// KubeClients turns a cluster's kubeconfig into a client of its Kubernetes API. Tests inject
// client-go's field-managed fake clientset; production uses KubeconfigClients.
type KubeClients interface {
	ForCluster(ctx context.Context, clusterID string, kubeconfig []byte) (kubernetes.Interface, error)
}

// DefaultKubeTimeout bounds one request to a cluster's API server.
const DefaultKubeTimeout = 20 * time.Second

// KubeconfigClients builds a real client from the kubeconfig the provider hands out.
type KubeconfigClients struct {
	// Timeout bounds one request (default DefaultKubeTimeout).
	Timeout time.Duration
}

// ForCluster parses the kubeconfig and builds a clientset. A parse error is not wrapped: it can
// quote the document, credential included.
func (k KubeconfigClients) ForCluster(_ context.Context, clusterID string, kubeconfig []byte) (kubernetes.Interface, error) {
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("substrates: cluster %s: the kubeconfig is not usable", clusterID)
	}
	cfg.Timeout = k.Timeout
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultKubeTimeout
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("substrates: cluster %s: kubernetes client: %w", clusterID, err)
	}
	return cs, nil
}
