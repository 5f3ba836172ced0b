package substrates_test

import (
	"strings"
	"testing"

	"github.com/digitalocean/godo"

	"better-compute.dev/compute/reconcile/substrates"
)

// TestKubeconfigClients builds a real client from the kubeconfig the simulator hands out (as
// godo returns it), and refuses a broken one without quoting it.
func TestKubeconfigClients(t *testing.T) {
	e := newEnv(t, "kubecfg")
	c, _, err := e.do.Kubernetes.Create(e.ctx, &godo.KubernetesClusterCreateRequest{Name: "k", RegionSlug: "nyc3",
		NodePools: []*godo.KubernetesNodePoolCreateRequest{{Name: "p", Size: "s-1vcpu-2gb", Count: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	cfg, _, err := e.do.Kubernetes.GetKubeConfig(e.ctx, c.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		reason     string
		kubeconfig []byte
		ok         bool
	}{
		{"the provider's kubeconfig", cfg.KubeconfigYAML, true},
		{"a document that is not a kubeconfig", []byte("token: secret-value\n: ["), false},
	}
	for _, tc := range cases {
		cs, err := substrates.KubeconfigClients{}.ForCluster(e.ctx, c.ID, tc.kubeconfig)
		if tc.ok != (err == nil && cs != nil) {
			t.Errorf("%s: %v, want ok=%v", tc.reason, err, tc.ok)
		}
		if err != nil && strings.Contains(err.Error(), "secret-value") {
			t.Errorf("%s: the error quotes the kubeconfig", tc.reason)
		}
	}
}
