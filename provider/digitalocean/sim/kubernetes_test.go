package sim_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/digitalocean/godo"

	"better-compute.dev/compute/provider/digitalocean/sim"
)

func clusterRequest(name string, pools ...*godo.KubernetesNodePoolCreateRequest) *godo.KubernetesClusterCreateRequest {
	if len(pools) == 0 {
		pools = []*godo.KubernetesNodePoolCreateRequest{{Name: "workers", Size: "s-2vcpu-4gb", Count: 2}}
	}
	return &godo.KubernetesClusterCreateRequest{Name: name, RegionSlug: "nyc3", VersionSlug: "latest", NodePools: pools}
}

func TestClusterProvisionsThenRuns(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sim.Options{})
	ctx := t.Context()
	c, resp, err := e.do.Kubernetes.Create(ctx, clusterRequest("alpha"))
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if resp.StatusCode != http.StatusCreated || c.Status.State != godo.KubernetesClusterStatusProvisioning {
		t.Fatalf("create answered %d %v, want 201 provisioning", resp.StatusCode, c.Status)
	}
	if c.VersionSlug != sim.DefaultKubernetesVersion || len(c.NodePools) != 1 || len(c.NodePools[0].Nodes) != 2 {
		t.Fatalf("cluster %+v: want default version and one pool of two nodes", c)
	}
	e.clock.Advance(sim.ClusterProvisionDelay)
	got, _, err := e.do.Kubernetes.Get(ctx, c.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status.State != godo.KubernetesClusterStatusRunning {
		t.Errorf("after the delay the cluster is %s, want running", got.Status.State)
	}
	for _, n := range got.NodePools[0].Nodes {
		if n.Status.State != "running" || n.DropletID == "" {
			t.Errorf("node %+v: want running with a droplet id", n)
		}
	}
	cfg, _, err := e.do.Kubernetes.GetKubeConfig(ctx, c.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Clusters []struct {
			Cluster struct {
				Server string `json:"server"`
			} `json:"cluster"`
		} `json:"clusters"`
	}
	if err := json.Unmarshal(cfg.KubeconfigYAML, &doc); err != nil || len(doc.Clusters) != 1 || doc.Clusters[0].Cluster.Server != c.Endpoint {
		t.Errorf("kubeconfig %s (%v): want the cluster's endpoint", cfg.KubeconfigYAML, err)
	}
	found, _, err := e.do.Kubernetes.List(ctx, &godo.ListOptions{})
	if err != nil || len(found) != 1 || found[0].ID != c.ID {
		t.Errorf("list: %v %v, want the one cluster", found, err)
	}
	if _, err := e.do.Kubernetes.Delete(ctx, c.ID); err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.do.Kubernetes.Get(ctx, c.ID); statusOf(err) != http.StatusNotFound {
		t.Errorf("get after delete: %v, want 404", err)
	}
}

func TestClusterCreateRefusals(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sim.Options{})
	if _, _, err := e.do.Kubernetes.Create(t.Context(), clusterRequest("taken")); err != nil {
		t.Fatal(err)
	}
	pool := func(name, size string, count int) *godo.KubernetesNodePoolCreateRequest {
		return &godo.KubernetesNodePoolCreateRequest{Name: name, Size: size, Count: count}
	}
	cases := []struct {
		reason string
		req    *godo.KubernetesClusterCreateRequest
	}{
		{"names are unique within an account", clusterRequest("taken")},
		{"a name must be a DNS label", clusterRequest("Bad_Name")},
		{"the region must exist", &godo.KubernetesClusterCreateRequest{Name: "r", RegionSlug: "mars1", NodePools: []*godo.KubernetesNodePoolCreateRequest{pool("p", "s-1vcpu-2gb", 1)}}},
		{"the version must be offered", &godo.KubernetesClusterCreateRequest{Name: "v", RegionSlug: "nyc3", VersionSlug: "0.1", NodePools: []*godo.KubernetesNodePoolCreateRequest{pool("p", "s-1vcpu-2gb", 1)}}},
		{"a cluster needs a node pool", &godo.KubernetesClusterCreateRequest{Name: "empty", RegionSlug: "nyc3"}},
		{"a node pool needs nodes", clusterRequest("zero", pool("p", "s-1vcpu-2gb", 0))},
		{"a node pool needs a size", clusterRequest("nosize", pool("p", "", 1))},
		{"node pool names are unique in a cluster", clusterRequest("dup", pool("p", "s-1vcpu-2gb", 1), pool("p", "s-1vcpu-2gb", 1))},
	}
	for _, tc := range cases {
		_, _, err := e.do.Kubernetes.Create(t.Context(), tc.req)
		if statusOf(err) != http.StatusUnprocessableEntity {
			t.Errorf("%s: %v, want 422", tc.reason, err)
		}
	}
}

func TestNodePools(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sim.Options{})
	ctx := t.Context()
	c, _, err := e.do.Kubernetes.Create(ctx, clusterRequest("beta"))
	if err != nil {
		t.Fatal(err)
	}
	np, _, err := e.do.Kubernetes.CreateNodePool(ctx, c.ID, &godo.KubernetesNodePoolCreateRequest{
		Name: "extra", Size: "s-1vcpu-2gb", Count: 1, Labels: map[string]string{"role": "extra"}})
	if err != nil {
		t.Fatal(err)
	}
	if np.Labels["role"] != "extra" || len(np.Nodes) != 1 || np.Nodes[0].Status.State != "provisioning" {
		t.Errorf("new pool %+v: want its label and one provisioning node", np)
	}
	if _, _, err := e.do.Kubernetes.CreateNodePool(ctx, c.ID, &godo.KubernetesNodePoolCreateRequest{Name: "extra", Size: "s-1vcpu-2gb", Count: 1}); statusOf(err) != http.StatusUnprocessableEntity {
		t.Errorf("second pool of the same name: %v, want 422", err)
	}
	three := 3
	up, _, err := e.do.Kubernetes.UpdateNodePool(ctx, c.ID, np.ID, &godo.KubernetesNodePoolUpdateRequest{Name: "extra", Count: &three})
	if err != nil || up.Count != 3 || len(up.Nodes) != 3 {
		t.Fatalf("resize: %+v %v, want three nodes", up, err)
	}
	if _, _, err := e.do.Kubernetes.UpdateNodePool(ctx, c.ID, np.ID, &godo.KubernetesNodePoolUpdateRequest{Count: &three}); statusOf(err) != http.StatusUnprocessableEntity {
		t.Errorf("update without a name: %v, want 422", err)
	}
	pools, _, err := e.do.Kubernetes.ListNodePools(ctx, c.ID, nil)
	if err != nil || len(pools) != 2 {
		t.Fatalf("list: %d pools, %v; want 2", len(pools), err)
	}
	if _, err := e.do.Kubernetes.DeleteNodePool(ctx, c.ID, np.ID); err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.do.Kubernetes.GetNodePool(ctx, c.ID, np.ID); statusOf(err) != http.StatusNotFound {
		t.Errorf("get deleted pool: %v, want 404", err)
	}
	if _, _, err := e.do.Kubernetes.ListNodePools(ctx, "no-such-cluster", nil); statusOf(err) != http.StatusNotFound {
		t.Errorf("pools of an unknown cluster: %v, want 404", err)
	}
}

func TestClustersAreAccountScoped(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sim.Options{Tokens: []string{"other-account"}})
	c, _, err := e.do.Kubernetes.Create(t.Context(), clusterRequest("mine"))
	if err != nil {
		t.Fatal(err)
	}
	other := godoClient(t, e.url, "other-account")
	if _, _, err := other.Kubernetes.Get(t.Context(), c.ID); statusOf(err) != http.StatusNotFound {
		t.Errorf("another account's cluster: %v, want 404", err)
	}
	if _, _, err := other.Kubernetes.GetKubeConfig(t.Context(), c.ID, nil); statusOf(err) != http.StatusNotFound {
		t.Errorf("another account's kubeconfig: %v, want 404", err)
	}
}
