package server_test

import (
	"net/http"
	"testing"

	"better-compute.dev/compute/app/apptest"
)

// TestPlatformSurface: only the platform admin (decided by OpenFGA on compute-platform) makes
// tenants, accounts, pools and quotas; a tenant's own admin cannot, and the secret of a provider
// token is never returned.
func TestPlatformSurface(t *testing.T) {
	s := apptest.Start(t)
	tn := s.NewTenant(t, "acme", "admin")
	status, got := s.PostJSON(t, "/api/compute/tenants/create", s.AdminToken, map[string]any{"tenantId": "initech"})
	if status != http.StatusOK {
		t.Fatalf("admin creates a tenant: %d %v", status, got)
	}
	for _, call := range []struct {
		path string
		body map[string]any
	}{
		{"/api/compute/tenants/create", map[string]any{"tenantId": "evil"}},
		{"/api/compute/quotas/set", map[string]any{"tenantId": tn.ID, "poolId": tn.PoolID, "resource": "loadBalancers", "limit": 1000}},
		{"/api/compute/providerAccounts/create", map[string]any{"tenantId": tn.ID, "kind": "digitalocean", "name": "mine", "token": "x"}},
		{"/api/compute/pools/create", map[string]any{"tenantId": tn.ID, "accountId": tn.AccountID, "name": "p2", "regions": []any{"nyc3"}}},
	} {
		status, got := s.PostJSON(t, call.path, tn.Token, call.body)
		if status != http.StatusForbidden || got["code"] != "ACCESS_DENIED" {
			t.Errorf("tenant admin %s: %d %v", call.path, status, got)
		}
	}
	status, got = s.PostJSON(t, "/api/compute/providerAccounts/create", s.AdminToken,
		map[string]any{"tenantId": tn.ID, "kind": "digitalocean", "name": "second", "token": "dop_v1_supersecret"})
	acct, _ := got["account"].(map[string]any)
	if status != http.StatusOK || acct["tokenSet"] != true {
		t.Fatalf("account: %d %v", status, got)
	}
	_, got = s.PostJSON(t, "/api/compute/providerAccounts/get", tn.Token, map[string]any{"tenantId": tn.ID, "accountId": acct["id"]})
	for _, body := range []map[string]any{got, acct} {
		for k, v := range body {
			if s, ok := v.(string); ok && s == "dop_v1_supersecret" {
				t.Fatalf("token returned in %s", k)
			}
		}
	}
	var sealed []byte
	if err := s.App.DB.Q().QueryRow(t.Context(), "SELECT token_sealed FROM provider_accounts WHERE id = $1", acct["id"]).Scan(&sealed); err != nil {
		t.Fatal(err)
	}
	if len(sealed) == 0 || string(sealed) == "dop_v1_supersecret" || contains(sealed, "supersecret") {
		t.Fatal("token not sealed at rest")
	}
}

func contains(b []byte, s string) bool {
	for i := 0; i+len(s) <= len(b); i++ {
		if string(b[i:i+len(s)]) == s {
			return true
		}
	}
	return false
}
