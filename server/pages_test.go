package server_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"better-compute.dev/compute/app/apptest"
	v1 "better-compute.dev/compute/gen/go/bettercompute/compute/v1"
	idgen "better-compute.dev/compute/ids"
	"better-compute.dev/compute/store"
)

// seedLoadBalancers inserts n load balancers of tn straight through the store (the API would
// take minutes), in one transaction, and returns their ids in creation order.
func seedLoadBalancers(t *testing.T, s *apptest.Stack, tn apptest.Tenant, n int) []string {
	t.Helper()
	out := make([]string, 0, n)
	err := store.ExecuteTx(t.Context(), s.App.DB, func(tx pgx.Tx) error {
		out = out[:0]
		for i := range n {
			row, err := store.InsertLoadBalancer(t.Context(), tx, store.LoadBalancer{
				ID: idgen.New(idgen.LoadBalancer), TenantID: tn.ID, PoolID: tn.PoolID, AccountID: tn.AccountID,
				Name: fmt.Sprintf("seed-%d", i), Scope: "regional", Region: "nyc3", Spec: []byte(`{"targets":{"pool":true}}`),
			})
			if err != nil {
				return err
			}
			out = append(out, row.ID)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestListPagesBeyondAThousand: a tenant with 1,050 load balancers lists every one exactly once
// by pages through the JSON mapping while others are created and deleted meanwhile; the default
// answer stays the first 1000 (with a token for the rest).
func TestListPagesBeyondAThousand(t *testing.T) {
	s := apptest.Start(t)
	tn := s.NewTenant(t, "acme", "editor")
	if _, err := s.App.Service.SetQuota(s.AdminCtx, &v1.SetQuotaRequest{TenantId: tn.ID, PoolId: tn.PoolID, Resource: "loadBalancers", Limit: 100}); err != nil {
		t.Fatal(err)
	}
	seeded := seedLoadBalancers(t, s, tn, 1050)

	status, got := s.PostJSON(t, "/api/compute/loadBalancers/list", tn.Token, map[string]any{"tenantId": tn.ID})
	if status != http.StatusOK || len(got["loadBalancers"].([]any)) != 1000 || got["nextPageToken"] == "" {
		t.Fatalf("default answer: %d, %d items", status, len(got["loadBalancers"].([]any)))
	}
	if first := got["loadBalancers"].([]any)[0].(map[string]any)["id"]; first != seeded[0] {
		t.Fatalf("default answer starts at %v, want %s", first, seeded[0])
	}

	// Meanwhile: 20 creates through the API, 30 deletes of seeded ones (10 marked deleted
	// outright so they leave the list).
	ctx, stop := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	var bgErr error
	var mu sync.Mutex
	fail := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		if bgErr == nil {
			bgErr = err
		}
	}
	deleted := map[string]bool{}
	for i := 0; i < 30; i++ {
		deleted[seeded[100+i*30]] = true
	}
	wg.Add(2)
	go func() {
		defer wg.Done()
		for i := 0; i < 20 && ctx.Err() == nil; i++ {
			req := createRequest(tn, fmt.Sprintf("bg-%d", i))
			req.Name = fmt.Sprintf("bg-%d", i)
			if _, err := s.App.Service.CreateLoadBalancer(tn.Ctx, req); err != nil {
				fail(err)
			}
		}
	}()
	go func() {
		defer wg.Done()
		i := 0
		for id := range deleted {
			if i%3 == 0 {
				_, err := store.RecordLoadBalancerObservation(context.Background(), s.App.DB.Q(), store.LoadBalancerObservation{ID: id, State: "deleted", MarkDeleted: true})
				if err != nil {
					fail(err)
				}
			} else if _, err := s.App.Service.DeleteLoadBalancer(tn.Ctx, &v1.DeleteLoadBalancerRequest{TenantId: tn.ID, LoadBalancerId: id}); err != nil {
				fail(err)
			}
			i++
		}
	}()

	seen := map[string]int{}
	token, pages := "", 0
	for {
		body := map[string]any{"tenantId": tn.ID, "pageSize": 100}
		if token != "" {
			body["pageToken"] = token
		}
		status, got := s.PostJSON(t, "/api/compute/loadBalancers/list", tn.Token, body)
		if status != http.StatusOK {
			t.Fatalf("page %d: %d %v", pages, status, got)
		}
		items, _ := got["loadBalancers"].([]any)
		if len(items) > 100 {
			t.Fatalf("page %d has %d items", pages, len(items))
		}
		for _, it := range items {
			seen[it.(map[string]any)["id"].(string)]++
		}
		pages++
		token, _ = got["nextPageToken"].(string)
		if token == "" {
			break
		}
	}
	stop()
	wg.Wait()
	if bgErr != nil {
		t.Fatal(bgErr)
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("%s listed %d times", id, n)
		}
	}
	for _, id := range seeded {
		if !deleted[id] && seen[id] != 1 {
			t.Errorf("seeded %s, never deleted, listed %d times", id, seen[id])
		}
	}
	if pages < 11 {
		t.Errorf("%d pages for more than 1,020 load balancers at 100 a page", pages)
	}
}

// TestPageTokenIsBound: a changed token, another tenant's, or one of other filters is
// INVALID_INPUT pageToken; pageSize outside 1-1000 is INVALID_INPUT pageSize.
func TestPageTokenIsBound(t *testing.T) {
	s := apptest.Start(t)
	a := s.NewTenant(t, "acme", "editor")
	b := s.NewTenant(t, "globex", "editor")
	seedLoadBalancers(t, s, a, 3)
	seedLoadBalancers(t, s, b, 3)
	status, got := s.PostJSON(t, "/api/compute/loadBalancers/list", a.Token, map[string]any{"tenantId": a.ID, "pageSize": 1})
	tok, _ := got["nextPageToken"].(string)
	if status != http.StatusOK || len(got["loadBalancers"].([]any)) != 1 || tok == "" {
		t.Fatalf("first page: %d %v", status, got)
	}
	last := tok[len(tok)-2:]
	flipped := tok[:len(tok)-2] + map[bool]string{true: "AA", false: "AB"}[last != "AA"]
	cases := []struct {
		name  string
		token string
		body  map[string]any
		field string
	}{
		{"tampered", b.Token, map[string]any{"tenantId": b.ID, "pageToken": flipped}, "pageToken"},
		{"tampered, own tenant", a.Token, map[string]any{"tenantId": a.ID, "pageToken": flipped}, "pageToken"},
		{"another tenant's", b.Token, map[string]any{"tenantId": b.ID, "pageToken": tok}, "pageToken"},
		{"other filters", a.Token, map[string]any{"tenantId": a.ID, "pageToken": tok, "includeDeleted": true}, "pageToken"},
		{"not a token", a.Token, map[string]any{"tenantId": a.ID, "pageToken": "plb_whatever"}, "pageToken"},
		{"pageSize too large", a.Token, map[string]any{"tenantId": a.ID, "pageSize": 1001}, "pageSize"},
		{"pageSize negative", a.Token, map[string]any{"tenantId": a.ID, "pageSize": -1}, "pageSize"},
	}
	for _, c := range cases {
		status, e := s.PostJSON(t, "/api/compute/loadBalancers/list", c.token, c.body)
		if status != http.StatusBadRequest || e["code"] != "INVALID_INPUT" || e["field"] != c.field {
			t.Errorf("%s: %d %v", c.name, status, e)
		}
	}
	status, got = s.PostJSON(t, "/api/compute/loadBalancers/list", a.Token, map[string]any{"tenantId": a.ID, "pageSize": 1, "pageToken": tok})
	if status != http.StatusOK || len(got["loadBalancers"].([]any)) != 1 {
		t.Fatalf("second page: %d %v", status, got)
	}
}
