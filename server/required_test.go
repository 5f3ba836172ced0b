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
