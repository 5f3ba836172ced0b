package server_test

import (
	"net/http"
	"testing"

	"better-compute.dev/compute/internal/apptest"
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
	var state string
	if err := s.App.DB.Q().QueryRow(t.Context(), "SELECT state FROM load_balancers WHERE id = $1", id).Scan(&state); err != nil || state != "pending" {
		t.Fatalf("the refused delete changed the row: %q %v", state, err)
	}
}
