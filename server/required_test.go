package server_test

import (
	"net/http"
	"strings"
	"testing"

	"better-compute.dev/compute/app/apptest"
)

// TestMissingFieldsAreRequired: a required string field left out is answered "<field> is
// required" naming it, not with the rule its empty value happens to break; a value that breaks
// the rule still gets the rule's message.
func TestMissingFieldsAreRequired(t *testing.T) {
	s := apptest.Start(t)
	tn := s.NewTenant(t, "req", "editor")
	valid := func() map[string]any {
		return map[string]any{
			"tenantId": tn.ID, "poolId": tn.PoolID, "name": "web", "region": "nyc3", "targets": map[string]any{"pool": true},
			"forwarding":     []any{map[string]any{"entryProtocol": "http", "entryPort": 80, "targetProtocol": "http", "targetPort": 8080}},
			"idempotencyKey": "k-required",
		}
	}
	for _, field := range []string{"tenantId", "poolId", "idempotencyKey", "name"} {
		for _, how := range []string{"absent", "empty"} {
			body := valid()
			if how == "absent" {
				delete(body, field)
			} else {
				body[field] = ""
			}
			status, got := s.PostJSON(t, "/api/compute/loadBalancers/create", tn.Token, body)
			msg, _ := got["message"].(string)
			if status != http.StatusBadRequest || got["code"] != "INVALID_INPUT" || got["field"] != field || !strings.Contains(msg, field+" is required") {
				t.Errorf("%s %s: %d %v, want INVALID_INPUT %q naming the field", field, how, status, got, field+" is required")
			}
		}
	}
	body := valid()
	body["region"] = "Not A Region!"
	status, got := s.PostJSON(t, "/api/compute/loadBalancers/create", tn.Token, body)
	if msg, _ := got["message"].(string); status != http.StatusBadRequest || got["field"] != "region" || strings.Contains(msg, "is required") {
		t.Errorf("a bad region: %d %v, want INVALID_INPUT with the rule's message", status, got)
	}
}

// TestTypeErrorsNameTheField: a value of the wrong JSON type is INVALID_INPUT naming the field
// by its path, without the decoder's internals, on the JSON mapping and on Connect.
func TestTypeErrorsNameTheField(t *testing.T) {
	s := apptest.Start(t)
	tn := s.NewTenant(t, "types", "editor")
	rule := func(port any) map[string]any {
		return map[string]any{"entryProtocol": "http", "entryPort": port, "targetProtocol": "http", "targetPort": 8080}
	}
	for _, c := range []struct {
		set   func(map[string]any)
		field string
	}{
		{func(b map[string]any) { b["forwarding"] = []any{rule(80), rule("eighty")} }, "forwarding[1].entryPort"},
		{func(b map[string]any) { b["forwarding"] = rule(80) }, "forwarding"},
		{func(b map[string]any) { b["name"] = 5 }, "name"},
		{func(b map[string]any) { b["targets"] = "all" }, "targets"},
		{func(b map[string]any) { b["targets"] = map[string]any{"pool": "yes"} }, "targets.pool"},
		{func(b map[string]any) { b["forwarding"] = []any{rule(80.5)} }, "forwarding[0].entryPort"},
		{func(b map[string]any) { b["colour"] = "blue" }, "colour"},
	} {
		body := map[string]any{
			"tenantId": tn.ID, "poolId": tn.PoolID, "name": "web", "region": "nyc3", "targets": map[string]any{"pool": true},
			"forwarding": []any{rule(80)}, "idempotencyKey": "k-types",
		}
		c.set(body)
		status, got := s.PostJSON(t, "/api/compute/loadBalancers/create", tn.Token, body)
		msg, _ := got["message"].(string)
		if status != http.StatusBadRequest || got["code"] != "INVALID_INPUT" || got["field"] != c.field || strings.Contains(msg, "proto") {
			t.Errorf("JSON mapping, %s: %d %v, want INVALID_INPUT naming %s", c.field, status, got, c.field)
		}
		status, got = s.PostJSON(t, "/bettercompute.compute.v1.LoadBalancerService/CreateLoadBalancer", tn.Token, body)
		if msg, _ := got["message"].(string); status != http.StatusBadRequest || !strings.Contains(msg, c.field+":") {
			t.Errorf("Connect, %s: %d %v, want invalid_argument naming %s", c.field, status, got, c.field)
		}
	}
}

// TestEmptyListsAreEmitted: an empty list is `[]` in a JSON answer, never a missing key, so
// `jq '.loadBalancers[]'` works on a tenant with none.
func TestEmptyListsAreEmitted(t *testing.T) {
	s := apptest.Start(t)
	tn := s.NewTenant(t, "lists", "editor")
	for _, path := range []string{"/api/compute/loadBalancers/list", "/bettercompute.compute.v1.LoadBalancerService/ListLoadBalancers"} {
		status, got := s.PostJSON(t, path, tn.Token, map[string]any{"tenantId": tn.ID})
		if lbs, ok := got["loadBalancers"].([]any); status != http.StatusOK || !ok || len(lbs) != 0 {
			t.Errorf("%s: %d %v, want \"loadBalancers\": []", path, status, got)
		}
	}
}
