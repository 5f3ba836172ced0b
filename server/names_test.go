package server_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"testing"

	"better-compute.dev/compute/app/apptest"
	v1 "better-compute.dev/compute/gen/go/bettercompute/compute/v1"
	"better-compute.dev/compute/store"
)

// TestLoadBalancerNamesAreUnique: of 32 concurrent creates of one name through the JSON mapping,
// one wins and 31 are INVALID_INPUT name, with nothing else written; the name stays taken while
// the load balancer is being deleted, is free again once it is deleted, and another tenant may
// use it all along.
func TestLoadBalancerNamesAreUnique(t *testing.T) {
	s := apptest.Start(t)
	a := s.NewTenant(t, "acme", "editor")
	b := s.NewTenant(t, "globex", "editor")
	for _, tn := range []apptest.Tenant{a, b} {
		if _, err := s.App.Pools.SetQuota(s.AdminCtx, &v1.SetQuotaRequest{TenantId: tn.ID, PoolId: tn.PoolID, Resource: "loadBalancers", Limit: 100}); err != nil {
			t.Fatal(err)
		}
	}
	body := func(tn apptest.Tenant, key string) map[string]any {
		return map[string]any{"tenantId": tn.ID, "poolId": tn.PoolID, "name": "web", "region": "nyc3", "targets": map[string]any{"pool": true},
			"forwarding":     []any{map[string]any{"entryProtocol": "http", "entryPort": 80, "targetProtocol": "http", "targetPort": 8080}},
			"idempotencyKey": key}
	}
	type answer struct {
		status int
		got    map[string]any
		err    error
	}
	answers := make([]answer, 32)
	var wg sync.WaitGroup
	for i := range answers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf, _ := json.Marshal(body(a, fmt.Sprintf("race-%d", i)))
			req, _ := http.NewRequest(http.MethodPost, s.App.URL+"/api/compute/loadBalancers/create", bytes.NewReader(buf))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+a.Token)
			resp, err := s.HTTP.Do(req)
			if err != nil {
				answers[i].err = err
				return
			}
			defer resp.Body.Close()
			answers[i].status = resp.StatusCode
			answers[i].err = json.NewDecoder(resp.Body).Decode(&answers[i].got)
		}()
	}
	wg.Wait()
	var winner string
	for i, an := range answers {
		switch {
		case an.err != nil:
			t.Fatalf("racer %d: %v", i, an.err)
		case an.status == http.StatusOK:
			if winner != "" {
				t.Fatalf("two winners: %s and %v", winner, an.got)
			}
			winner = an.got["loadBalancer"].(map[string]any)["id"].(string)
		case an.status != http.StatusBadRequest || an.got["code"] != "INVALID_INPUT" || an.got["field"] != "name":
			t.Fatalf("racer %d: %d %v", i, an.status, an.got)
		}
	}
	if winner == "" {
		t.Fatal("no winner")
	}
	lbs, err := s.App.LoadBalancers.ListLoadBalancers(a.Ctx, &v1.ListLoadBalancersRequest{TenantId: a.ID})
	if err != nil || len(lbs) != 1 {
		t.Fatalf("list after the race: %d %v", len(lbs), err)
	}
	quotas, err := s.App.Pools.ListQuotas(a.Ctx, &v1.ListQuotasRequest{TenantId: a.ID, PoolId: a.PoolID})
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range quotas {
		if q.GetResource() == "loadBalancers" && q.GetUsed() != 1 {
			t.Fatalf("the losers booked quota: %v", q)
		}
	}

	// Another tenant may hold the same name.
	if status, got := s.PostJSON(t, "/api/compute/loadBalancers/create", b.Token, body(b, "b1")); status != http.StatusOK {
		t.Fatalf("other tenant: %d %v", status, got)
	}
	// Being deleted still holds it; deleted frees it.
	if _, err := s.App.LoadBalancers.DeleteLoadBalancer(a.Ctx, &v1.DeleteLoadBalancerRequest{TenantId: a.ID, LoadBalancerId: winner}); err != nil {
		t.Fatal(err)
	}
	if status, got := s.PostJSON(t, "/api/compute/loadBalancers/create", a.Token, body(a, "after-delete")); status != http.StatusBadRequest || got["field"] != "name" {
		t.Fatalf("while deleting: %d %v", status, got)
	}
	if _, err := store.RecordLoadBalancerObservation(t.Context(), s.App.DB.Q(), store.LoadBalancerObservation{ID: winner, State: "deleted", MarkDeleted: true}); err != nil {
		t.Fatal(err)
	}
	if status, got := s.PostJSON(t, "/api/compute/loadBalancers/create", a.Token, body(a, "after-deleted")); status != http.StatusOK {
		t.Fatalf("after deleted: %d %v", status, got)
	}
}
