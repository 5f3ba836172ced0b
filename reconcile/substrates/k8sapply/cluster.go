package k8sapply

import (
	"fmt"

	appsv1client "k8s.io/client-go/kubernetes/typed/apps/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	rbacv1client "k8s.io/client-go/kubernetes/typed/rbac/v1"
	"k8s.io/client-go/rest"
)

// Cluster is the part of a cluster's Kubernetes API the substrate reconciler reads and writes:
// the core, apps and RBAC groups. It is this narrow interface rather than client-go's
// kubernetes.Interface because that clientset, and its fake, compile and link a typed client for
// every API group Kubernetes has: most of what building this module spent on client-go, for
// three groups used. Production uses Clients; tests use package k8sfake.
type Cluster interface {
	CoreV1() corev1client.CoreV1Interface
	AppsV1() appsv1client.AppsV1Interface
	RbacV1() rbacv1client.RbacV1Interface
}

// Clients is a Cluster reached over HTTP: the three typed clients sharing one connection pool,
// as client-go's clientset shares one among its groups.
type Clients struct {
	core corev1client.CoreV1Interface
	apps appsv1client.AppsV1Interface
	rbac rbacv1client.RbacV1Interface
}

// NewClients builds the three group clients for cfg.
func NewClients(cfg *rest.Config) (*Clients, error) {
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("k8sapply: http client: %w", err)
	}
	c := &Clients{}
	if c.core, err = corev1client.NewForConfigAndClient(cfg, hc); err != nil {
		return nil, fmt.Errorf("k8sapply: core/v1 client: %w", err)
	}
	if c.apps, err = appsv1client.NewForConfigAndClient(cfg, hc); err != nil {
		return nil, fmt.Errorf("k8sapply: apps/v1 client: %w", err)
	}
	if c.rbac, err = rbacv1client.NewForConfigAndClient(cfg, hc); err != nil {
		return nil, fmt.Errorf("k8sapply: rbac/v1 client: %w", err)
	}
	return c, nil
}

func (c *Clients) CoreV1() corev1client.CoreV1Interface { return c.core }
func (c *Clients) AppsV1() appsv1client.AppsV1Interface { return c.apps }
func (c *Clients) RbacV1() rbacv1client.RbacV1Interface { return c.rbac }
