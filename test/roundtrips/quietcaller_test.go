package roundtrips

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"better-compute.dev/compute/authz"
	"better-compute.dev/compute/core"
	"better-compute.dev/compute/store/storetest"
	"better-compute.dev/compute/testwait"
)

// engineChecks reads how many checks a replica's authorizer has sent to the OpenFGA engine.
func engineChecks(t *testing.T, az authz.Authorizer) int64 {
	t.Helper()
	n, ok := authz.EngineChecks(az)
	if !ok {
		t.Fatalf("%T counts no engine checks", az)
	}
	return n
}

// TestQuietCallerStaysWarm: a caller who calls again after longer than the caches' staleness
// bound (core.PrincipalCacheTTL, authz.DecisionTTL), with nothing changed meanwhile, is answered
// from the caches the change feeds keep confirmed: its get costs the get's own round trip and no
// engine check. (With entries that expired by clock it paid a token read and engine checks.)
func TestQuietCallerStaysWarm(t *testing.T) {
	rt := &storetest.RoundTrips{}
	s := startReplica(t, storetest.NewSchema(t), "memory", rt)
	tn := s.NewTenant(t, "quiet", "editor")
	pool := s.NewPool(t, tn.ID, tn.AccountID, "big", 10)
	status, out := s.PostJSON(t, "/api/compute/loadBalancers/create", tn.Token, map[string]any{
		"tenantId": tn.ID, "poolId": pool, "name": "quiet", "region": "nyc3", "targets": map[string]any{"pool": true},
		"forwarding":     []any{map[string]any{"entryProtocol": "http", "entryPort": 80, "targetProtocol": "http", "targetPort": 8080}},
		"idempotencyKey": "quiet",
	})
	if status != http.StatusOK {
		t.Fatalf("create: HTTP %d %v", status, out)
	}
	get := map[string]any{"tenantId": tn.ID, "loadBalancerId": out["loadBalancer"].(map[string]any)["id"]}
	// As in TestRoundTripsPerCall: the principal cache's baseline read forgets what it held before
	// it, so the warm get below comes after that read.
	testwait.Until(t, 10*time.Second, "the principal cache's first credential version read", func() (bool, string) {
		n := s.App.Base.CredentialVersionReads()
		return n > 0, fmt.Sprintf("%d reads", n)
	})
	if status, out := s.PostJSON(t, "/api/compute/loadBalancers/get", tn.Token, get); status != http.StatusOK {
		t.Fatalf("get: HTTP %d %v", status, out)
	}
	const pause = 3 * time.Second
	if pause <= core.PrincipalCacheTTL || pause <= authz.DecisionTTL {
		t.Fatal("the pause must outlast the caches' staleness bound")
	}
	time.Sleep(pause)
	before, checksBefore := rt.Count(), engineChecks(t, s.App.Authz)
	if status, out := s.PostJSON(t, "/api/compute/loadBalancers/get", tn.Token, get); status != http.StatusOK {
		t.Fatalf("get after %v: HTTP %d %v", pause, status, out)
	}
	trips, checks := rt.Count()-before, engineChecks(t, s.App.Authz)-checksBefore
	t.Logf("a get %v after the previous one: %d round trips, %d engine checks", pause, trips, checks)
	if trips != 1 || checks != 0 {
		t.Errorf("a get %v after the previous one took %d round trips and %d engine checks; want 1 and 0", pause, trips, checks)
	}
}
