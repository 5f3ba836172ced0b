package server_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"better-compute.dev/compute/app/apptest"
)

// TestAuthorizationFailsClosed: with the OpenFGA engine gone, every call is refused with
// UNAVAILABLE (503 on the JSON mapping) — never allowed, never INTERNAL.
func TestAuthorizationFailsClosed(t *testing.T) {
	s := apptest.Start(t)
	tn := s.NewTenant(t, "acme", "editor")
	body := map[string]any{
		"tenantId": tn.ID, "poolId": tn.PoolID, "name": "web", "region": "nyc3", "targets": map[string]any{"pool": true},
		"forwarding":     []any{map[string]any{"entryProtocol": "http", "entryPort": 80, "targetProtocol": "http", "targetPort": 8080}},
		"idempotencyKey": "k1",
	}
	status, got := s.PostJSON(t, "/api/compute/loadBalancers/create", tn.Token, body)
	if status != http.StatusOK {
		t.Fatalf("create: %d %v", status, got)
	}
	id := got["loadBalancer"].(map[string]any)["id"]
	if err := s.App.Authz.Close(); err != nil {
		t.Fatal(err)
	}
	for _, call := range []struct {
		path string
		body any
	}{
		{"/api/compute/loadBalancers/get", map[string]any{"tenantId": tn.ID, "loadBalancerId": id}},
		{"/api/compute/loadBalancers/list", map[string]any{"tenantId": tn.ID}},
		{"/api/compute/loadBalancers/delete", map[string]any{"tenantId": tn.ID, "loadBalancerId": id}},
		{"/api/compute/loadBalancers/create", body},
	} {
		status, got := s.PostJSON(t, call.path, tn.Token, call.body)
		if status != http.StatusServiceUnavailable || got["code"] != "UNAVAILABLE" {
			t.Errorf("%s: %d %v, want 503 UNAVAILABLE", call.path, status, got)
		}
	}
	// The answer says when to retry: Retry-After on the JSON mapping, RetryInfo on Connect.
	for _, path := range []string{"/api/compute/loadBalancers/list", "/bettercompute.compute.v1.LoadBalancerService/ListLoadBalancers"} {
		req, _ := http.NewRequest(http.MethodPost, s.App.URL+path, strings.NewReader(`{"tenantId":"`+tn.ID+`"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+tn.Token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable {
			t.Errorf("%s: HTTP %d, want 503", path, resp.StatusCode)
		}
		if strings.HasPrefix(path, "/api/") && resp.Header.Get("Retry-After") != "1" {
			t.Errorf("%s: Retry-After %q, want 1", path, resp.Header.Get("Retry-After"))
		}
		if !strings.HasPrefix(path, "/api/") && !strings.Contains(string(raw), "google.rpc.RetryInfo") {
			t.Errorf("%s: no RetryInfo in %s", path, raw)
		}
	}
	var state string
	if err := s.App.DB.Q().QueryRow(t.Context(), "SELECT state FROM load_balancers WHERE id = $1", id).Scan(&state); err != nil || state != "pending" {
		t.Fatalf("the refused delete changed the row: %q %v", state, err)
	}
}
