package server_test

import (
	"net/http"
	"slices"
	"testing"

	"better-compute.dev/compute/app/apptest"
	v1 "better-compute.dev/compute/gen/go/bettercompute/compute/v1"
)

// TestJSONUpdateClearsPartsGiven: on the JSON mapping the keys present are the parts replaced,
// so "domains": [] empties the domains and null removes a health check or sticky sessions; a body
// with no part changes nothing; an unknown updateMask path is INVALID_INPUT updateMask.
func TestJSONUpdateClearsPartsGiven(t *testing.T) {
	s := apptest.Start(t)
	tn := s.NewTenant(t, "acme", "editor")
	post := func(method string, body map[string]any) map[string]any {
		t.Helper()
		status, got := s.PostJSON(t, "/api/compute/loadBalancers/"+method, tn.Token, body)
		if status != http.StatusOK {
			t.Fatalf("%s: %d %v", method, status, got)
		}
		return got["loadBalancer"].(map[string]any)
	}
	rule := []any{map[string]any{"entryProtocol": "http", "entryPort": 80, "targetProtocol": "http", "targetPort": 8080}}
	reg := post("create", map[string]any{"tenantId": tn.ID, "poolId": tn.PoolID, "name": "web", "region": "nyc3",
		"targets": map[string]any{"pool": true}, "forwarding": rule, "idempotencyKey": "k1"})
	glb := post("create", map[string]any{"tenantId": tn.ID, "poolId": tn.PoolID, "name": "edge", "scope": "global",
		"targets": map[string]any{"loadBalancerIds": []any{reg["id"]}}, "forwarding": rule, "idempotencyKey": "k2",
		"domains":        []any{map[string]any{"name": "example.com"}},
		"healthCheck":    map[string]any{"protocol": "tcp", "port": 8080},
		"stickySessions": map[string]any{"cookieName": "lb", "ttlSeconds": 60}})
	id := glb["id"]
	if glb["healthCheck"] == nil || glb["stickySessions"] == nil || len(glb["domains"].([]any)) != 1 {
		t.Fatalf("create answer %v", glb)
	}

	// No part: a no-op, no event.
	before := lbEvents(t, s, tn, id.(string))
	post("update", map[string]any{"tenantId": tn.ID, "loadBalancerId": id})
	if after := lbEvents(t, s, tn, id.(string)); len(after) != len(before) {
		t.Fatalf("a body with no part published %v", after[len(before):])
	}

	got := post("update", map[string]any{"tenantId": tn.ID, "loadBalancerId": id, "domains": []any{}, "healthCheck": nil, "stickySessions": nil})
	if d, ok := got["domains"].([]any); !ok || len(d) != 0 {
		t.Fatalf("domains stayed: %v", got)
	}
	if got["healthCheck"] != nil || got["stickySessions"] != nil || len(got["forwarding"].([]any)) != 1 {
		t.Fatalf("health check or sticky sessions stayed, or forwarding went: %v", got)
	}
	evs := lbEvents(t, s, tn, id.(string))
	last := evs[len(evs)-1]
	changed := last.GetData().GetFields()["changed"].GetListValue().AsSlice()
	if last.GetType() != "providerLoadBalancer.updated" || !slices.Equal(changed, []any{"healthCheck", "stickySessions", "domains"}) {
		t.Fatalf("event %v", last)
	}
	stored := post("get", map[string]any{"tenantId": tn.ID, "loadBalancerId": id})
	if d, _ := stored["domains"].([]any); stored["healthCheck"] != nil || len(d) != 0 {
		t.Fatalf("get after clearing: %v", stored)
	}

	for _, bad := range []map[string]any{
		{"tenantId": tn.ID, "loadBalancerId": id, "updateMask": "healthCheck,name"},
		{"tenantId": tn.ID, "loadBalancerId": id, "updateMask": "region"},
	} {
		status, e := s.PostJSON(t, "/api/compute/loadBalancers/update", tn.Token, bad)
		if status != http.StatusBadRequest || e["code"] != "INVALID_INPUT" || e["field"] != "updateMask" {
			t.Fatalf("%v: %d %v", bad, status, e)
		}
	}
	// Forwarding and targets are required parts: clearing them is INVALID_INPUT naming them.
	for field, body := range map[string]map[string]any{
		"forwarding": {"tenantId": tn.ID, "loadBalancerId": id, "forwarding": []any{}},
		"targets":    {"tenantId": tn.ID, "loadBalancerId": id, "targets": nil},
	} {
		status, e := s.PostJSON(t, "/api/compute/loadBalancers/update", tn.Token, body)
		if status != http.StatusBadRequest || e["code"] != "INVALID_INPUT" || e["field"] != field {
			t.Fatalf("%s: %d %v", field, status, e)
		}
	}
}

func lbEvents(t *testing.T, s *apptest.Stack, tn apptest.Tenant, id string) []*v1.Event {
	t.Helper()
	evs, _, err := s.App.Events.ListEvents(tn.Ctx, &v1.ListEventsRequest{TenantId: tn.ID, ResourceId: id})
	if err != nil {
		t.Fatal(err)
	}
	return evs
}
