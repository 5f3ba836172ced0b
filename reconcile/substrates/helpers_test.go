package substrates_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"better-compute.dev/compute/reconcile/substrates/k8sapply"
	"better-compute.dev/compute/reconcile/substrates/k8sapply/k8sfake"
	"github.com/digitalocean/godo"
	"golang.org/x/oauth2"

	"better-compute.dev/compute/app/apptest"
	v1 "better-compute.dev/compute/gen/go/bettercompute/compute/v1"
	"better-compute.dev/compute/provider/digitalocean"
	"better-compute.dev/compute/provider/digitalocean/sim"
	"better-compute.dev/compute/reconcile"
	"better-compute.dev/compute/reconcile/reconciletest"
	"better-compute.dev/compute/reconcile/substrates"
	"better-compute.dev/compute/store"
)

// fakeKube hands out one field-managed fake cluster (k8sfake) per cluster id, made on first use, so a
// test can seed a cluster's objects before the reconciler sees it and read them afterwards.
type fakeKube struct {
	mu       sync.Mutex
	clusters map[string]*k8sfake.Cluster
}

func (f *fakeKube) ForCluster(_ context.Context, clusterID string, kubeconfig []byte) (k8sapply.Cluster, error) {
	if len(kubeconfig) == 0 {
		return nil, fmt.Errorf("no kubeconfig for %s", clusterID)
	}
	return f.cluster(clusterID), nil
}

func (f *fakeKube) cluster(id string) *k8sfake.Cluster {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.clusters == nil {
		f.clusters = map[string]*k8sfake.Cluster{}
	}
	cs := f.clusters[id]
	if cs == nil {
		cs = k8sfake.New()
		f.clusters[id] = cs
	}
	return cs
}

// env is the control plane in process (real PostgreSQL and OpenFGA), the DigitalOcean
// simulator on a manual clock served over HTTP, and a runner holding only the substrates
// reconciler, driven pass by pass on a manual lease clock.
type env struct {
	s      *apptest.Stack
	sim    *sim.Server
	simNow *sim.ManualClock
	clock  *reconciletest.Clock
	runner *reconcile.Runner
	kube   *fakeKube
	tn     apptest.Tenant
	do     *godo.Client // the tenant's own view of its provider account
	ctx    context.Context
}

const (
	providerPoll = 5 * time.Second
	resync       = 5 * time.Minute
)

func newEnv(t *testing.T, tenantID string) *env {
	t.Helper()
	return newEnvWith(t, tenantID, nil)
}

// newEnvWith is newEnv with the reconciler's options changed by tune.
func newEnvWith(t *testing.T, tenantID string, tune func(*substrates.Options)) *env {
	t.Helper()
	return newEnvSim(t, tenantID, nil, tune)
}

// newEnvSim is newEnvWith with the simulator's options changed by simTune.
func newEnvSim(t *testing.T, tenantID string, simTune func(*sim.Options), tune func(*substrates.Options)) *env {
	t.Helper()
	simNow := sim.NewManualClock(time.Now())
	simOpts := sim.Options{AcceptAnyToken: true, RequestsPerMinute: -1, RequestsPerHour: -1, Now: simNow.Now}
	if simTune != nil {
		simTune(&simOpts)
	}
	simulator := sim.New(simOpts)
	url, err := simulator.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = simulator.Close() })
	s := apptest.Start(t)
	// Runs before the stack stops: the passes this test drove left no cluster without work.
	t.Cleanup(func() { reconciletest.AssertQueued(t, context.Background(), s.App.DB) })
	s.SimulatorURL = url
	tn := s.NewTenant(t, tenantID, "viewer")
	kube := &fakeKube{}
	opts := substrates.Options{
		DB: s.App.DB, Keyring: s.App.Base.Keyring, Kube: kube, JoinURL: s.App.URL,
		Factory:      digitalocean.NewFactory(digitalocean.Options{Limiters: digitalocean.NewLimiters(), RequestsPerMinute: 60000, Burst: 1000}),
		ProviderPoll: providerPoll, Resync: resync,
	}
	if tune != nil {
		tune(&opts)
	}
	rec, err := substrates.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	clock := reconciletest.NewClock(time.Now().Add(time.Minute))
	runner, err := reconcile.New(reconcile.Options{
		DB: s.App.DB, Holder: "test", Handlers: map[string]reconcile.Handler{substrates.Kind: rec}, Clock: clock,
		Backoff: reconcile.Exponential{Initial: time.Second, Max: time.Second},
	})
	if err != nil {
		t.Fatal(err)
	}
	hc := oauth2.NewClient(context.Background(), oauth2.StaticTokenSource(&oauth2.Token{AccessToken: "do-token-" + tenantID}))
	do, err := godo.New(hc, godo.SetBaseURL(url+"/"))
	if err != nil {
		t.Fatal(err)
	}
	return &env{s: s, sim: simulator, simNow: simNow, clock: clock, runner: runner, kube: kube, tn: tn, do: do, ctx: context.Background()}
}

// settle runs the reconciler until it has nothing due, moving both clocks past every poll and
// provisioning delay in between, for at most rounds rounds (a resync is never reached: it is
// far longer than a round).
func (e *env) settle(t *testing.T) {
	t.Helper()
	for range 6 {
		reconciletest.Drain(t, e.ctx, e.runner)
		e.clock.Advance(providerPoll + time.Second)
		e.simNow.Advance(sim.ClusterProvisionDelay + time.Second)
	}
	reconciletest.Drain(t, e.ctx, e.runner)
}

// resync moves past the resync interval and runs the pass it schedules.
func (e *env) resync(t *testing.T) {
	t.Helper()
	e.clock.Advance(resync + time.Second)
	e.settle(t)
}

// setPolicy replaces the pool's policy as the platform admin.
func (e *env) setPolicy(t *testing.T, policy *v1.PoolPolicy) {
	t.Helper()
	if _, err := e.s.App.Pools.UpdatePool(e.s.AdminCtx, &v1.UpdatePoolRequest{TenantId: e.tn.ID, PoolId: e.tn.PoolID, Policy: policy}); err != nil {
		t.Fatalf("update pool: %v", err)
	}
}

// substrate reads the pool's substrate row.
func (e *env) substrate(t *testing.T) store.Substrate {
	t.Helper()
	sub, err := store.GetSubstrateByPool(e.ctx, e.s.App.DB.Q(), e.tn.PoolID)
	if err != nil {
		t.Fatal(err)
	}
	return sub
}

// clusters lists the tenant account's clusters at the simulator.
func (e *env) clusters(t *testing.T) []*godo.KubernetesCluster {
	t.Helper()
	cs, _, err := e.do.Kubernetes.List(e.ctx, &godo.ListOptions{PerPage: 200})
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// nodePoolNames lists a cluster's node pool names at the simulator.
func (e *env) nodePoolNames(t *testing.T, clusterID string) []string {
	t.Helper()
	nps, _, err := e.do.Kubernetes.ListNodePools(e.ctx, clusterID, &godo.ListOptions{PerPage: 200})
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, 0, len(nps))
	for _, np := range nps {
		out = append(out, np.Name)
	}
	return out
}

func flavors() []*v1.Flavor {
	return []*v1.Flavor{{Name: "small", Size: "s-1vcpu-2gb", Count: 2}, {Name: "big", Size: "s-4vcpu-8gb", Count: 1}}
}

func createPolicy(accountID string) *v1.PoolPolicy {
	return &v1.PoolPolicy{Flavors: flavors(), Substrate: &v1.PoolSubstrate{Kind: "kubernetes", Account: accountID,
		Cluster: &v1.SubstrateCluster{Mode: &v1.SubstrateCluster_Create{Create: &v1.ClusterCreate{Region: "nyc3"}}}}}
}

func adoptPolicy(accountID, clusterID string) *v1.PoolPolicy {
	return &v1.PoolPolicy{Flavors: flavors(), Substrate: &v1.PoolSubstrate{Kind: "kubernetes", Account: accountID,
		Cluster: &v1.SubstrateCluster{Mode: &v1.SubstrateCluster_Adopt{Adopt: &v1.ClusterAdopt{Id: clusterID}}}}}
}
