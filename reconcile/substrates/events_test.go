package substrates_test

import (
	"context"
	"net/http"
	"slices"
	"testing"
	"time"

	"connectrpc.com/connect"

	"better-compute.dev/compute/core"
	v1 "better-compute.dev/compute/gen/go/bettercompute/compute/v1"
	"better-compute.dev/compute/gen/go/bettercompute/compute/v1/computev1connect"
	"better-compute.dev/compute/store"
)

// TestEventsFollowTheCluster: a substrate's life is published like a load balancer's, and a
// tenant follows its pool's cluster through events/list and WatchEvents: created when the
// policy names it, ready with the cluster and its node pools, updated when a flavor's count
// changes, deleted after the teardown. A resync that changes nothing publishes nothing, and
// another tenant sees none of it.
func TestEventsFollowTheCluster(t *testing.T) {
	e := newEnv(t, "initech")
	e.s.App.Service.WatchPoll = 20 * time.Millisecond
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
	want := []string{core.EventSubstrateCreated, core.EventSubstrateReady, core.EventSubstrateUpdated, core.EventSubstrateDeleted}

	// events/list on the JSON mapping, filtered on the substrate.
	code, body := e.s.PostJSON(t, "/api/compute/events/list", e.tn.Token, map[string]any{"tenantId": e.tn.ID, "resourceId": sub.ID})
	if code != http.StatusOK {
		t.Fatalf("events/list: %d %v", code, body)
	}
	listed, _ := body["events"].([]any)
	var types []string
	var ready, updated map[string]any
	for _, raw := range listed {
		ev := raw.(map[string]any)
		types = append(types, ev["type"].(string))
		data, _ := ev["data"].(map[string]any)
		if data["poolId"] != e.tn.PoolID {
			t.Errorf("event %v: data.poolId is not the pool", ev)
		}
		switch ev["type"] {
		case core.EventSubstrateReady:
			ready = data
		case core.EventSubstrateUpdated:
			updated = data
		}
	}
	if !slices.Equal(types, want) {
		t.Fatalf("listed %v, want %v", types, want)
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
