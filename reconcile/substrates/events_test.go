package substrates_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/digitalocean/godo"

	v1 "better-compute.dev/compute/gen/go/bettercompute/compute/v1"
	"better-compute.dev/compute/gen/go/bettercompute/compute/v1/computev1connect"
	"better-compute.dev/compute/lifecycle"
	"better-compute.dev/compute/provider/digitalocean/sim"
	"better-compute.dev/compute/store"
)

// TestEventsFollowTheCluster: a substrate's life is published like a load balancer's, and a
// tenant follows its pool's cluster through events/list and WatchEvents: created when the
// policy names it, ready with the cluster and its node pools, updated when a flavor's count
// changes, deleted after the teardown, and each node pool has events of its own on the same
// resource (created, ready, updated, deleted). A resync that changes nothing publishes nothing, and
// another tenant sees none of it.
func TestEventsFollowTheCluster(t *testing.T) {
	e := newEnv(t, "initech")
	e.s.App.Events.Poll = 20 * time.Millisecond
	other := e.s.NewTenant(t, "umbrella", "viewer")
	e.setPolicy(t, createPolicy(e.tn.AccountID))
	e.settle(t)
	sub := e.substrate(t)
	if sub.State != "ready" {
		t.Fatalf("substrate %s (%q), want ready", sub.State, sub.LastError)
	}
	e.resync(t) // nothing changed: no event
	resized := createPolicy(e.tn.AccountID)
	resized.Flavors[0].Count = 3
	e.setPolicy(t, resized)
	e.settle(t)
	e.setPolicy(t, &v1.PoolPolicy{Flavors: flavors()})
	e.settle(t)
	if got := e.substrate(t); got.State != "deleted" {
		t.Fatalf("substrate %s (%q), want deleted", got.State, got.LastError)
	}
	// Each node pool has its own events beside the cluster's: created and ready before the
	// cluster is ready, updated (with the cluster) on the resize and ready once its new node
	// runs, deleted before the cluster's teardown is.
	want := []string{
		lifecycle.EventSubstrateCreated,
		lifecycle.EventSubstrateNodePoolCreated, lifecycle.EventSubstrateNodePoolReady, // small
		lifecycle.EventSubstrateNodePoolCreated, lifecycle.EventSubstrateNodePoolReady, // big
		lifecycle.EventSubstrateReady,
		lifecycle.EventSubstrateNodePoolUpdated, lifecycle.EventSubstrateUpdated, lifecycle.EventSubstrateNodePoolReady, // small resized to 3
		lifecycle.EventSubstrateNodePoolDeleted, lifecycle.EventSubstrateNodePoolDeleted,
		lifecycle.EventSubstrateDeleted,
	}
	smallPool, bigPool := "bc-"+strings.ReplaceAll(e.tn.PoolID, "_", "-")+"-small", "bc-"+strings.ReplaceAll(e.tn.PoolID, "_", "-")+"-big"
	wantPools := []string{"", smallPool, smallPool, bigPool, bigPool, "", smallPool, "", smallPool, smallPool, bigPool, ""}

	// events/list on the JSON mapping, filtered on the substrate.
	code, body := e.s.PostJSON(t, "/api/compute/events/list", e.tn.Token, map[string]any{"tenantId": e.tn.ID, "resourceId": sub.ID})
	if code != http.StatusOK {
		t.Fatalf("events/list: %d %v", code, body)
	}
	listed, _ := body["events"].([]any)
	var types, pools []string
	var ready, updated map[string]any
	for _, raw := range listed {
		ev := raw.(map[string]any)
		types = append(types, ev["type"].(string))
		data, _ := ev["data"].(map[string]any)
		if data["poolId"] != e.tn.PoolID {
			t.Errorf("event %v: data.poolId is not the pool", ev)
		}
		np, _ := data["nodePool"].(map[string]any)
		name, _ := np["name"].(string)
		pools = append(pools, name)
		if np != nil && data["clusterId"] != sub.ClusterID {
			t.Errorf("node pool event %v: data.clusterId is not the substrate's cluster %s", ev, sub.ClusterID)
		}
		if ev["type"] == lifecycle.EventSubstrateNodePoolReady && np["ready"] != true {
			t.Errorf("node pool ready event %v: nodePool.ready is not true", ev)
		}
		switch ev["type"] {
		case lifecycle.EventSubstrateReady:
			ready = data
		case lifecycle.EventSubstrateUpdated:
			updated = data
		}
	}
	if !slices.Equal(types, want) {
		t.Fatalf("listed %v, want %v", types, want)
	}
	if !slices.Equal(pools, wantPools) {
		t.Errorf("node pools of the events %v, want %v", pools, wantPools)
	}
	if ready["clusterId"] != sub.ClusterID || ready["clusterOrigin"] != "created" || len(ready["nodePools"].([]any)) != 2 {
		t.Errorf("ready data %v: want the created cluster and its two node pools", ready)
	}
	counts := map[string]float64{}
	for _, np := range updated["nodePools"].([]any) {
		np := np.(map[string]any)
		counts[np["flavor"].(string)] = np["count"].(float64)
	}
	if counts["small"] != 3 || counts["big"] != 1 {
		t.Errorf("updated data %v: want small resized to 3", updated)
	}

	// WatchEvents over Connect streams the same events from the start.
	watch := computev1connect.NewEventServiceClient(http.DefaultClient, e.s.App.URL)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	req := connect.NewRequest(&v1.WatchEventsRequest{TenantId: e.tn.ID})
	req.Header().Set("Authorization", "Bearer "+e.tn.Token)
	stream, err := watch.WatchEvents(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	var streamed []string
	for len(streamed) < len(want) && stream.Receive() {
		if ev := stream.Msg().GetEvent(); ev.GetResourceId() == sub.ID {
			streamed = append(streamed, ev.GetType())
		}
	}
	_ = stream.Close()
	if !slices.Equal(streamed, want) {
		t.Errorf("streamed %v (%v), want %v", streamed, stream.Err(), want)
	}

	// Another tenant cannot list them, and its own events hold none of them.
	if code, _ := e.s.PostJSON(t, "/api/compute/events/list", other.Token, map[string]any{"tenantId": e.tn.ID}); code == http.StatusOK {
		t.Error("another tenant listed this tenant's events")
	}
	theirs, err := store.ListEvents(e.ctx, e.s.App.DB.Q(), other.ID, 0, 1000, sub.ID)
	if err != nil || len(theirs) != 0 {
		t.Errorf("the other tenant's events %v %v: want none of the substrate's", theirs, err)
	}
}

// TestNodePoolErrorEvent: a node pool the provider refuses to make publishes its own error
// event, naming the node pool and the refusal, beside the substrate's error.
func TestNodePoolErrorEvent(t *testing.T) {
	e := newEnv(t, "vandelay")
	own, _, err := e.do.Kubernetes.Create(e.ctx, &godo.KubernetesClusterCreateRequest{
		Name: "tenant-prod", RegionSlug: "nyc3",
		NodePools: []*godo.KubernetesNodePoolCreateRequest{{Name: "tenant-pool", Size: "s-2vcpu-4gb", Count: 1}},
	})
	if err != nil {
		t.Fatal(err)
	}
	e.simNow.Advance(2 * sim.ClusterProvisionDelay)
	policy := adoptPolicy(e.tn.AccountID, own.ID)
	policy.Flavors = []*v1.Flavor{{Name: "odd", Size: "Not_A_Size", Count: 1}}
	e.setPolicy(t, policy)
	e.settle(t)
	sub := e.substrate(t)
	if sub.State != "error" {
		t.Fatalf("substrate %s (%q): want error", sub.State, sub.LastError)
	}
	evs, err := store.ListEvents(e.ctx, e.s.App.DB.Q(), e.tn.ID, 0, 1000, sub.ID)
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	var failed map[string]any
	for _, ev := range evs {
		types = append(types, ev.Type)
		if ev.Type == lifecycle.EventSubstrateNodePoolError {
			failed = ev.Data
		}
	}
	if !slices.Equal(types, []string{lifecycle.EventSubstrateCreated, lifecycle.EventSubstrateNodePoolError, lifecycle.EventSubstrateError}) {
		t.Fatalf("events %v: want created, the node pool's error, then the substrate's", types)
	}
	np, _ := failed["nodePool"].(map[string]any)
	if np["flavor"] != "odd" || np["size"] != "Not_A_Size" || failed["clusterId"] != own.ID ||
		!strings.Contains(failed["error"].(string), "Not_A_Size") {
		t.Errorf("node pool error data %v: want the odd flavor's pool on the adopted cluster and the refusal", failed)
	}
}
