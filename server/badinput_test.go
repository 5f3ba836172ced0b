package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"better-compute.dev/compute/app/apptest"
)

// validCreate is a create request every constraint accepts; each case breaks exactly one thing.
func validCreate() map[string]any {
	return map[string]any{
		"tenantId":       "acme",
		"poolId":         "pool_01m8vjp5r2ph80akzhx2janz7c",
		"name":           "web",
		"targets":        map[string]any{"pool": true},
		"forwarding":     []any{map[string]any{"entryProtocol": "http", "entryPort": 80, "targetProtocol": "http", "targetPort": 8080}},
		"idempotencyKey": "key-1",
	}
}

func rule(over map[string]any) map[string]any {
	r := map[string]any{"entryProtocol": "http", "entryPort": 80, "targetProtocol": "http", "targetPort": 8080}
	for k, v := range over {
		r[k] = v
	}
	return r
}

func hc(over map[string]any) map[string]any {
	h := map[string]any{"protocol": "http", "port": 8080}
	for k, v := range over {
		h[k] = v
	}
	return h
}

func repeat(v any, n int) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = v
	}
	return out
}

func ids(prefix string, n int) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = prefix + "01m8vjp5r2ph80akzhx2jan" + string(rune('a'+i%20)) + string(rune('a'+i/20)) + "c"
	}
	return out
}

type badInput struct {
	reason string // the seed constraint broken
	path   string
	mutate func(m map[string]any)
	field  string // the field the answer must name
}

func set(k string, v any) func(map[string]any) { return func(m map[string]any) { m[k] = v } }

func del(k string) func(map[string]any) { return func(m map[string]any) { delete(m, k) } }

// createCases is one case per constraint of the seed's loadBalancers/create table.
var createCases = []badInput{
	{"tenantId is required", "create", del("tenantId"), "tenantId"},
	{"tenantId at most 128 characters", "create", set("tenantId", strings.Repeat("a", 129)), "tenantId"},
	{"tenantId matches ^[A-Za-z0-9._:-]{1,128}$", "create", set("tenantId", "acme corp"), "tenantId"},
	{"projectId at most 56 characters", "create", set("projectId", "prj_"+strings.Repeat("a", 53)), "projectId"},
	{"projectId matches ^prj_...$", "create", set("projectId", "project-1"), "projectId"},
	{"poolId is required", "create", del("poolId"), "poolId"},
	{"poolId at most 57 characters", "create", set("poolId", "pool_"+strings.Repeat("a", 53)), "poolId"},
	{"poolId matches ^pool_...$", "create", set("poolId", "pool_ABC"), "poolId"},
	{"name is required", "create", del("name"), "name"},
	{"name at most 42 characters", "create", set("name", "a"+strings.Repeat("b", 42)), "name"},
	{"name matches ^[a-z]([-a-z0-9]{0,40}[a-z0-9])?$ (upper case)", "create", set("name", "Web"), "name"},
	{"name matches (trailing dash)", "create", set("name", "web-"), "name"},
	{"description at most 256 characters", "create", set("description", strings.Repeat("d", 257)), "description"},
	{"scope one of regional, global", "create", set("scope", "local"), "scope"},
	{"region at most 40 characters", "create", set("region", "a"+strings.Repeat("b", 40)), "region"},
	{"region matches ^[a-z][a-z0-9-]{0,38}[a-z0-9]$", "create", set("region", "NYC3"), "region"},
	{"subnetId at most 57 characters", "create", set("subnetId", "snet_"+strings.Repeat("a", 53)), "subnetId"},
	{"subnetId matches ^snet_...$", "create", set("subnetId", "subnet-1"), "subnetId"},
	{"targets is required", "create", del("targets"), "targets"},
	{"targets names one of pool, instanceIds, loadBalancerIds", "create", set("targets", map[string]any{}), "targets"},
	{"targets names only one", "create", set("targets", map[string]any{"pool": true, "instanceIds": ids("inst_", 1)}), "targets"},
	{"targets.instanceIds 1-100 items", "create", set("targets", map[string]any{"instanceIds": ids("inst_", 101)}), "targets.instanceIds"},
	{"targets.instanceIds are instance ids", "create", set("targets", map[string]any{"instanceIds": []any{"vm-1"}}), "targets.instanceIds[0]"},
	{"targets.loadBalancerIds 1-100 items", "create", func(m map[string]any) {
		m["scope"] = "global"
		m["targets"] = map[string]any{"loadBalancerIds": ids("plb_", 101)}
	}, "targets.loadBalancerIds"},
	{"a regional load balancer does not target loadBalancerIds", "create", set("targets", map[string]any{"loadBalancerIds": ids("plb_", 1)}), "targets"},
	{"a global load balancer targets loadBalancerIds", "create", set("scope", "global"), "targets"},
	{"forwarding is required (1-15 items)", "create", del("forwarding"), "forwarding"},
	{"forwarding at most 15 items", "create", set("forwarding", repeat(rule(nil), 16)), "forwarding"},
	{"forwarding[].entryProtocol is required", "create", set("forwarding", []any{rule(map[string]any{"entryProtocol": ""})}), "forwarding[0].entryProtocol"},
	{"forwarding[].entryProtocol one of http, https, http2, tcp, udp", "create", set("forwarding", []any{rule(map[string]any{"entryProtocol": "ftp"})}), "forwarding[0].entryProtocol"},
	{"forwarding[].entryPort is required", "create", set("forwarding", []any{rule(map[string]any{"entryPort": 0})}), "forwarding[0].entryPort"},
	{"forwarding[].entryPort 1-65535", "create", set("forwarding", []any{rule(map[string]any{"entryPort": 65536})}), "forwarding[0].entryPort"},
	{"forwarding[].targetProtocol one of http, https, http2, tcp, udp", "create", set("forwarding", []any{rule(map[string]any{"targetProtocol": "smtp"})}), "forwarding[0].targetProtocol"},
	{"forwarding[].targetPort 1-65535 (low)", "create", set("forwarding", []any{rule(map[string]any{"targetPort": 0})}), "forwarding[0].targetPort"},
	{"forwarding[].targetPort 1-65535 (high)", "create", set("forwarding", []any{rule(map[string]any{"targetPort": 70000})}), "forwarding[0].targetPort"},
	{"forwarding[].certificateId at most 58 characters", "create", set("forwarding", []any{rule(map[string]any{"entryProtocol": "https", "certificateId": "pcert_" + strings.Repeat("a", 53)})}), "forwarding[0].certificateId"},
	{"forwarding[].certificateId matches ^pcert_...$", "create", set("forwarding", []any{rule(map[string]any{"entryProtocol": "https", "certificateId": "cert-1"})}), "forwarding[0].certificateId"},
	{"an https entry names a certificateId or passes TLS through", "create", set("forwarding", []any{rule(map[string]any{"entryProtocol": "https"})}), "forwarding[0]"},
	{"an http2 entry names a certificateId", "create", set("forwarding", []any{rule(map[string]any{"entryProtocol": "http2"})}), "forwarding[0]"},
	{"only an https entry passes TLS through", "create", set("forwarding", []any{rule(map[string]any{"entryProtocol": "http2", "targetProtocol": "https", "tlsPassthrough": true})}), "forwarding[0]"},
	{"forwarding[].tlsPassthrough is a boolean", "create", set("forwarding", []any{rule(map[string]any{"tlsPassthrough": "yes"})}), ""},
	{"healthCheck.protocol is required", "create", set("healthCheck", hc(map[string]any{"protocol": ""})), "healthCheck.protocol"},
	{"healthCheck.protocol one of http, https, tcp", "create", set("healthCheck", hc(map[string]any{"protocol": "udp"})), "healthCheck.protocol"},
	{"healthCheck.port is required", "create", set("healthCheck", hc(map[string]any{"port": 0})), "healthCheck.port"},
	{"healthCheck.port 1-65535", "create", set("healthCheck", hc(map[string]any{"port": 65536})), "healthCheck.port"},
	{"healthCheck.path at most 255 characters", "create", set("healthCheck", hc(map[string]any{"path": "/" + strings.Repeat("p", 255)})), "healthCheck.path"},
	{"healthCheck.intervalSeconds 3-300 (low)", "create", set("healthCheck", hc(map[string]any{"intervalSeconds": 2})), "healthCheck.intervalSeconds"},
	{"healthCheck.intervalSeconds 3-300 (high)", "create", set("healthCheck", hc(map[string]any{"intervalSeconds": 301})), "healthCheck.intervalSeconds"},
	{"healthCheck.timeoutSeconds 3-300 (low)", "create", set("healthCheck", hc(map[string]any{"timeoutSeconds": 2})), "healthCheck.timeoutSeconds"},
	{"healthCheck.timeoutSeconds 3-300 (high)", "create", set("healthCheck", hc(map[string]any{"timeoutSeconds": 301})), "healthCheck.timeoutSeconds"},
	{"healthCheck.healthyThreshold 2-10 (low)", "create", set("healthCheck", hc(map[string]any{"healthyThreshold": 1})), "healthCheck.healthyThreshold"},
	{"healthCheck.healthyThreshold 2-10 (high)", "create", set("healthCheck", hc(map[string]any{"healthyThreshold": 11})), "healthCheck.healthyThreshold"},
	{"healthCheck.unhealthyThreshold 2-10 (low)", "create", set("healthCheck", hc(map[string]any{"unhealthyThreshold": 1})), "healthCheck.unhealthyThreshold"},
	{"healthCheck.unhealthyThreshold 2-10 (high)", "create", set("healthCheck", hc(map[string]any{"unhealthyThreshold": 11})), "healthCheck.unhealthyThreshold"},
	{"stickySessions.cookieName is required", "create", set("stickySessions", map[string]any{"ttlSeconds": 60}), "stickySessions.cookieName"},
	{"stickySessions.cookieName at most 40 characters", "create", set("stickySessions", map[string]any{"cookieName": strings.Repeat("c", 41), "ttlSeconds": 60}), "stickySessions.cookieName"},
	{"stickySessions.cookieName matches ^[A-Za-z0-9_-]{1,40}$", "create", set("stickySessions", map[string]any{"cookieName": "my cookie", "ttlSeconds": 60}), "stickySessions.cookieName"},
	{"stickySessions.ttlSeconds is required", "create", set("stickySessions", map[string]any{"cookieName": "lb"}), "stickySessions.ttlSeconds"},
	{"stickySessions.ttlSeconds 1-604800", "create", set("stickySessions", map[string]any{"cookieName": "lb", "ttlSeconds": 604801}), "stickySessions.ttlSeconds"},
	{"sourceRanges.allow 0-50 items", "create", set("sourceRanges", map[string]any{"allow": repeat("10.0.0.0/8", 51)}), "sourceRanges.allow"},
	{"sourceRanges.allow are addresses or CIDR blocks", "create", set("sourceRanges", map[string]any{"allow": []any{"everyone"}}), "sourceRanges.allow[0]"},
	{"sourceRanges.deny 0-50 items", "create", set("sourceRanges", map[string]any{"deny": repeat("192.0.2.1", 51)}), "sourceRanges.deny"},
	{"sourceRanges.deny are addresses or CIDR blocks", "create", set("sourceRanges", map[string]any{"deny": []any{"10.0.0.1/8"}}), "sourceRanges.deny[0]"},
	{"redirectHttpToHttps is a boolean", "create", set("redirectHttpToHttps", "true"), ""},
	{"domains (global only)", "create", set("domains", []any{map[string]any{"name": "example.com"}}), "domains"},
	{"domains 0-20 items", "create", func(m map[string]any) {
		m["scope"], m["targets"] = "global", map[string]any{"loadBalancerIds": ids("plb_", 1)}
		m["domains"] = repeat(map[string]any{"name": "example.com"}, 21)
	}, "domains"},
	{"domains[].name is required", "create", func(m map[string]any) {
		m["scope"], m["targets"] = "global", map[string]any{"loadBalancerIds": ids("plb_", 1)}
		m["domains"] = []any{map[string]any{}}
	}, "domains[0].name"},
	{"domains[].name at most 253 characters", "create", func(m map[string]any) {
		m["scope"], m["targets"] = "global", map[string]any{"loadBalancerIds": ids("plb_", 1)}
		m["domains"] = []any{map[string]any{"name": strings.Repeat("a", 254)}}
	}, "domains[0].name"},
	{"domains[].certificateId matches ^pcert_...$", "create", func(m map[string]any) {
		m["scope"], m["targets"] = "global", map[string]any{"loadBalancerIds": ids("plb_", 1)}
		m["domains"] = []any{map[string]any{"name": "example.com", "certificateId": "pcert_X"}}
	}, "domains[0].certificateId"},
	{"a global load balancer has no region", "create", func(m map[string]any) {
		m["scope"], m["region"], m["targets"] = "global", "nyc3", map[string]any{"loadBalancerIds": ids("plb_", 1)}
	}, "region"},
	{"idempotencyKey is required", "create", del("idempotencyKey"), "idempotencyKey"},
	{"idempotencyKey at most 128 characters", "create", set("idempotencyKey", strings.Repeat("k", 129)), "idempotencyKey"},
	{"idempotencyKey matches ^[A-Za-z0-9._:-]{1,128}$", "create", set("idempotencyKey", "key/1"), "idempotencyKey"},
	{"unknown fields are refused", "create", set("idempotencykey", "k"), ""},
}

func validIDRequest() map[string]any {
	return map[string]any{"tenantId": "acme", "loadBalancerId": "plb_01m8vjp5r2ph80akzhx2janz7c"}
}

// forList drops the id: list takes tenantId and filters only.
func forList(mutate func(map[string]any)) func(map[string]any) {
	return func(m map[string]any) {
		delete(m, "loadBalancerId")
		mutate(m)
	}
}

// otherCases covers the list, get, update and delete tables.
var otherCases = []badInput{
	{"list: tenantId is required", "list", forList(del("tenantId")), "tenantId"},
	{"list: poolId matches ^pool_...$", "list", forList(set("poolId", "p1")), "poolId"},
	{"list: projectId matches ^prj_...$", "list", forList(set("projectId", "p1")), "projectId"},
	{"list: includeDeleted is a boolean", "list", forList(set("includeDeleted", 1)), ""},
	{"get: loadBalancerId is required", "get", del("loadBalancerId"), "loadBalancerId"},
	{"get: loadBalancerId at most 56 characters", "get", set("loadBalancerId", "plb_"+strings.Repeat("a", 53)), "loadBalancerId"},
	{"get: loadBalancerId matches ^plb_...$", "get", set("loadBalancerId", "lb-1"), "loadBalancerId"},
	{"get: tenantId matches", "get", set("tenantId", "a b"), "tenantId"},
	{"delete: loadBalancerId matches ^plb_...$", "delete", set("loadBalancerId", "plb_UPPER"), "loadBalancerId"},
	{"delete: tenantId is required", "delete", del("tenantId"), "tenantId"},
	{"update: loadBalancerId is required", "update", del("loadBalancerId"), "loadBalancerId"},
	{"update: forwarding 1-15 items", "update", set("forwarding", repeat(rule(nil), 16)), "forwarding"},
	{"update: forwarding[].entryPort 1-65535", "update", set("forwarding", []any{rule(map[string]any{"entryPort": -1})}), "forwarding[0].entryPort"},
	{"update: an https entry names a certificateId", "update", set("forwarding", []any{rule(map[string]any{"entryProtocol": "https"})}), "forwarding[0]"},
	{"update: targets names one", "update", set("targets", map[string]any{}), "targets"},
	{"update: targets.instanceIds 1-100 items", "update", set("targets", map[string]any{"instanceIds": ids("inst_", 101)}), "targets.instanceIds"},
	{"update: healthCheck.intervalSeconds 3-300", "update", set("healthCheck", hc(map[string]any{"intervalSeconds": 1})), "healthCheck.intervalSeconds"},
	{"update: stickySessions.ttlSeconds 1-604800", "update", set("stickySessions", map[string]any{"cookieName": "lb", "ttlSeconds": 0}), "stickySessions.ttlSeconds"},
	{"update: sourceRanges.allow 0-50 items", "update", set("sourceRanges", map[string]any{"allow": repeat("10.0.0.0/8", 51)}), "sourceRanges.allow"},
	{"update: domains 0-20 items", "update", set("domains", repeat(map[string]any{"name": "example.com"}, 21)), "domains"},
	{"update: domains[].name at most 253 characters", "update", set("domains", []any{map[string]any{"name": strings.Repeat("a", 254)}}), "domains[0].name"},
}

// TestBadInputIsInvalidInput sends one bad input per constraint of the seed's tables through the
// JSON mapping: each is 400 INVALID_INPUT naming the field, and nothing is written.
func TestBadInputIsInvalidInput(t *testing.T) {
	s := apptest.Start(t)
	tn := s.NewTenant(t, "acme", "editor")
	run := func(t *testing.T, cases []badInput, base func() map[string]any) {
		for _, tc := range cases {
			t.Run(tc.reason, func(t *testing.T) {
				body := base()
				tc.mutate(body)
				status, got := s.PostJSON(t, "/api/compute/loadBalancers/"+tc.path, tn.Token, body)
				if status != http.StatusBadRequest || got["code"] != "INVALID_INPUT" {
					t.Fatalf("got %d %v, want 400 INVALID_INPUT", status, got)
				}
				if tc.field != "" && got["field"] != tc.field {
					t.Fatalf("field = %v, want %q (message %v)", got["field"], tc.field, got["message"])
				}
				if msg, _ := got["message"].(string); msg == "" {
					t.Fatal("no message")
				}
			})
		}
	}
	run(t, createCases, validCreate)
	run(t, otherCases, func() map[string]any { return validIDRequest() })
	// Nothing was written by any of them.
	var n int
	if err := s.App.DB.Q().QueryRow(t.Context(), "SELECT count(*) FROM load_balancers").Scan(&n); err != nil || n != 0 {
		t.Fatalf("load balancers written by bad input: %d (%v)", n, err)
	}
	// The valid base request itself passes validation (it fails later, on the unknown pool).
	status, got := s.PostJSON(t, "/api/compute/loadBalancers/create", tn.Token, validCreate())
	if status != http.StatusNotFound || got["field"] != "poolId" {
		t.Fatalf("valid request: %d %v", status, got)
	}
}

// TestMalformedBodies: bodies that are not a request at all are INVALID_INPUT too, never INTERNAL.
func TestMalformedBodies(t *testing.T) {
	s := apptest.Start(t)
	tn := s.NewTenant(t, "acme", "editor")
	for _, body := range []string{"", "null", "[]", "not json", `{"tenantId": 5}`, `{"forwarding": {}}`, strings.Repeat("[", 10000)} {
		status, got := s.PostJSON(t, "/api/compute/loadBalancers/create", tn.Token, body)
		if status != http.StatusBadRequest || got["code"] != "INVALID_INPUT" {
			b, _ := json.Marshal(got)
			t.Errorf("body %.40q: got %d %s", body, status, b)
		}
	}
}

// TestOversizedRequests: a body past the size limit, or one with thousands of bad items, is
// INVALID_INPUT with a short message — never INTERNAL.
func TestOversizedRequests(t *testing.T) {
	s := apptest.Start(t)
	tn := s.NewTenant(t, "acme", "editor")
	status, got := s.PostJSON(t, "/api/compute/loadBalancers/create", tn.Token,
		`{"tenantId":"acme","description":"`+strings.Repeat("x", 5<<20)+`"}`)
	if status != http.StatusBadRequest || got["code"] != "INVALID_INPUT" {
		t.Fatalf("huge body: %d %v", status, got)
	}
	status, got = s.PostJSON(t, "/api/compute/loadBalancers/create", tn.Token,
		`{"tenantId":"acme","forwarding":[`+strings.Repeat(`{"entryPort":1},`, 20000)+`{}]}`)
	msg, _ := got["message"].(string)
	if status != http.StatusBadRequest || got["code"] != "INVALID_INPUT" || len(msg) > 2000 || !strings.Contains(msg, "more") {
		t.Fatalf("many violations: %d %s %.300s", status, got["code"], msg)
	}
}
