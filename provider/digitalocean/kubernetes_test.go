package digitalocean

import (
	"strings"
	"testing"

	"better-compute.dev/compute/provider"
	"better-compute.dev/compute/provider/digitalocean/sim"
)

func clustersOf(t *testing.T, e *testEnv) provider.Clusters {
	t.Helper()
	kp, ok := e.p.(provider.KubernetesProvider)
	if !ok {
		t.Fatal("the DigitalOcean provider does not implement provider.KubernetesProvider")
	}
	return kp.Clusters()
}

func TestClusterLifecycleThroughGodo(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sim.Options{}, Options{}, true)
	k := clustersOf(t, e)
	ctx := bg()
	spec := provider.ClusterSpec{Name: "bc-pool-1", Region: "nyc3", NodePools: []provider.NodePoolSpec{
		{Name: "bc-pool-1-small", Size: "s-1vcpu-2gb", Count: 2, Labels: map[string]string{"better-compute.dev/substrate-pool": "pool_1"}},
	}}
	c, err := k.Create(ctx, spec)
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if c.Status != provider.ClusterProvisioning || len(c.NodePools) != 1 || c.NodePools[0].Count != 2 {
		t.Fatalf("created %+v: want provisioning with one pool of 2", c)
	}
	if c.NodePools[0].Labels["better-compute.dev/substrate-pool"] != "pool_1" {
		t.Errorf("node pool labels %v: want the substrate label", c.NodePools[0].Labels)
	}
	e.clock.Advance(sim.ClusterProvisionDelay)
	got, err := k.Get(ctx, c.ID)
	if err != nil || got.Status != provider.ClusterRunning {
		t.Fatalf("get: %+v %v, want running", got, err)
	}
	byName, err := k.FindByName(ctx, "bc-pool-1")
	if err != nil || byName.ID != c.ID {
		t.Errorf("find by name: %+v %v, want %s", byName, err, c.ID)
	}
	_, err = k.FindByName(ctx, "bc-pool-2")
	wantKind(t, "an unknown name", err, provider.ErrNotFound)

	np, err := k.CreateNodePool(ctx, c.ID, provider.NodePoolSpec{Name: "bc-pool-1-big", Size: "s-4vcpu-8gb", Count: 1})
	if err != nil {
		t.Fatal(err)
	}
	if np, err = k.ResizeNodePool(ctx, c.ID, np.ID, 3); err != nil || np.Count != 3 || len(np.Nodes) != 3 {
		t.Fatalf("resize: %+v %v, want 3 nodes", np, err)
	}
	pools, err := k.NodePools(ctx, c.ID)
	if err != nil || len(pools) != 2 {
		t.Fatalf("node pools: %v %v, want 2", pools, err)
	}
	for _, n := range pools[1].Nodes {
		if n.ID == "" || n.Name == "" || n.MachineID == "" {
			t.Errorf("node %+v: want id, name and machine id", n)
		}
	}
	if err := k.DeleteNodePool(ctx, c.ID, np.ID); err != nil {
		t.Fatal(err)
	}
	if err := k.DeleteNodePool(ctx, c.ID, np.ID); err != nil {
		t.Errorf("deleting a deleted node pool: %v, want nil", err)
	}
	cfg, err := k.Kubeconfig(ctx, c.ID)
	if err != nil || !strings.Contains(string(cfg), c.Endpoint) {
		t.Errorf("kubeconfig: %q %v, want the endpoint in it", cfg, err)
	}
	if err := k.Delete(ctx, c.ID); err != nil {
		t.Fatal(err)
	}
	if err := k.Delete(ctx, c.ID); err != nil {
		t.Errorf("deleting a deleted cluster: %v, want nil", err)
	}
	_, err = k.Get(ctx, c.ID)
	wantKind(t, "get after delete", err, provider.ErrNotFound)
}

func TestClusterErrors(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sim.Options{}, Options{}, true)
	k := clustersOf(t, e)
	ctx := bg()
	cases := []struct {
		reason string
		call   func() error
		want   error
	}{
		{"a cluster without node pools is refused before sending", func() error {
			_, err := k.Create(ctx, provider.ClusterSpec{Name: "x", Region: "nyc3"})
			return err
		}, provider.ErrInvalid},
		{"an unknown region is the provider's 422", func() error {
			_, err := k.Create(ctx, provider.ClusterSpec{Name: "x", Region: "mars1",
				NodePools: []provider.NodePoolSpec{{Name: "p", Size: "s-1vcpu-2gb", Count: 1}}})
			return err
		}, provider.ErrInvalid},
		{"a malformed id is refused", func() error { _, err := k.Get(ctx, "a/b"); return err }, provider.ErrInvalid},
		{"an unknown cluster's pools", func() error { _, err := k.NodePools(ctx, "nope"); return err }, provider.ErrNotFound},
		{"an unknown cluster's kubeconfig", func() error { _, err := k.Kubeconfig(ctx, "nope"); return err }, provider.ErrNotFound},
		{"resizing an unknown pool", func() error { _, err := k.ResizeNodePool(ctx, "nope", "nope", 2); return err }, provider.ErrNotFound},
	}
	for _, tc := range cases {
		err := tc.call()
		wantKind(t, tc.reason, err, tc.want)
		if err != nil && strings.Contains(err.Error(), e.account.Token) {
			t.Errorf("%s: the error carries the token", tc.reason)
		}
	}
}
