// Package openapi checks the checked-in OpenAPI description (openapi/compute.json) against a
// real replica: every JSON route is called, on real PostgreSQL and OpenFGA, with requests that
// succeed and requests that fail, and every request body and every answer (status, headers,
// body, error bodies included) is validated against the document by a JSON Schema 2020-12
// validator (OpenAPI 3.1's schema dialect). The test fails when a route of the server has no
// call answered 200 and no call answered an error, when the document describes a path the server
// has no route for, and when a field the document marks required can be left out.
package openapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/netip"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"better-compute.dev/compute/app/apptest"
	"better-compute.dev/compute/ids"
	"better-compute.dev/compute/openapi"
	"better-compute.dev/compute/server"
	"better-compute.dev/compute/store"
)

const docURL = "mem://compute.json"

// spec is the document, parsed, with a compiler for the schemas it holds.
type spec struct {
	doc      map[string]any
	compiler *jsonschema.Compiler
	compiled map[string]*jsonschema.Schema
}

// formats are the OpenAPI formats the document uses beyond JSON Schema's own, asserted.
func formats() []*jsonschema.Format {
	integer := func(lo, hi float64) func(v any) error {
		return func(v any) error {
			var text string
			switch n := v.(type) {
			case json.Number:
				text = n.String()
			case string:
				text = n
			default:
				return nil
			}
			if strings.ContainsAny(text, ".eE") {
				return fmt.Errorf("%s is not an integer", text)
			}
			f, err := json.Number(text).Float64()
			if err != nil {
				return err
			}
			if f < lo || f > hi {
				return fmt.Errorf("%s is out of range", text)
			}
			return nil
		}
	}
	ip := func(v any) error {
		if s, ok := v.(string); ok && net.ParseIP(s) == nil {
			return fmt.Errorf("%q is not an IP address", s)
		}
		return nil
	}
	host := regexp.MustCompile(`^([A-Za-z0-9]([-A-Za-z0-9]{0,61}[A-Za-z0-9])?)(\.[A-Za-z0-9]([-A-Za-z0-9]{0,61}[A-Za-z0-9])?)*\.?$`)
	return []*jsonschema.Format{
		{Name: "int32", Validate: integer(math.MinInt32, math.MaxInt32)},
		{Name: "int64", Validate: integer(math.MinInt64, math.MaxInt64)},
		{Name: "uint64", Validate: integer(0, math.MaxUint64)},
		{Name: "float", Validate: func(any) error { return nil }},
		{Name: "double", Validate: func(any) error { return nil }},
		{Name: "ip", Validate: ip},
		{Name: openapi.FormatIPNetwork, Validate: func(v any) error {
			if s, ok := v.(string); ok {
				if p, err := netip.ParsePrefix(s); err != nil || p.Masked() != p {
					return fmt.Errorf("%q is not a CIDR block with zero host bits", s)
				}
			}
			return nil
		}},
		{Name: "hostname-or-ip", Validate: func(v any) error {
			if s, ok := v.(string); ok && net.ParseIP(s) == nil && !host.MatchString(s) {
				return fmt.Errorf("%q is neither a hostname nor an IP address", s)
			}
			return nil
		}},
	}
}

func loadSpec(t *testing.T) *spec {
	t.Helper()
	raw, err := jsonschema.UnmarshalJSON(bytes.NewReader(openapi.Document))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	for _, f := range formats() {
		c.RegisterFormat(f)
	}
	if err := c.AddResource(docURL, raw); err != nil {
		t.Fatal(err)
	}
	sp := &spec{compiler: c, compiled: map[string]*jsonschema.Schema{}}
	if err := json.Unmarshal(openapi.Document, &sp.doc); err != nil {
		t.Fatal(err)
	}
	if v := sp.doc["openapi"]; v != "3.1.0" {
		t.Fatalf("openapi %v, want 3.1.0", v)
	}
	// Every component schema compiles (is valid JSON Schema 2020-12, every $ref resolves).
	for name := range obj(obj(sp.doc["components"])["schemas"]) {
		sp.schema(t, "#/components/schemas/"+escape(name))
	}
	return sp
}

func escape(token string) string {
	return strings.ReplaceAll(strings.ReplaceAll(token, "~", "~0"), "/", "~1")
}

func obj(v any) map[string]any { m, _ := v.(map[string]any); return m }

func (sp *spec) schema(t *testing.T, pointer string) *jsonschema.Schema {
	t.Helper()
	if s, ok := sp.compiled[pointer]; ok {
		return s
	}
	s, err := sp.compiler.Compile(docURL + pointer)
	if err != nil {
		t.Fatalf("compile %s: %v", pointer, err)
	}
	sp.compiled[pointer] = s
	return s
}

// operation is the document's POST operation of path, and its JSON pointer.
func (sp *spec) operation(path string) (map[string]any, string) {
	op := obj(obj(obj(sp.doc["paths"])[path])["post"])
	return op, "#/paths/" + escape(path) + "/post"
}

// header resolves a header object, following a $ref into components.headers.
func (sp *spec) header(h map[string]any) map[string]any {
	if ref, ok := h["$ref"].(string); ok {
		name := strings.TrimPrefix(ref, "#/components/headers/")
		return obj(obj(obj(sp.doc["components"])["headers"])[name])
	}
	return h
}

// call is one exchange on the JSON mapping.
type call struct {
	route  string
	token  string
	body   any
	method string // "" POST
	// invalid: the body breaks the document (the test checks the document says so too).
	invalid bool
	// anyBody: the call is refused before its body is read (no token, not POST).
	anyBody bool
}

type answer struct {
	status int
	header http.Header
	body   map[string]any
}

type harness struct {
	t      *testing.T
	s      *apptest.Stack
	sp     *spec
	prefix string
	// statuses answered per route.
	statuses map[string]map[int]int
	// okBodies are the bodies of calls answered 200, per route (for the required-field check).
	okBodies map[string][]map[string]any
	n        int
}

func (h *harness) do(c call) answer {
	t := h.t
	t.Helper()
	path := h.prefix + c.route
	op, ptr := h.sp.operation(path)
	if op == nil {
		t.Fatalf("%s: the document has no POST %s", c.route, path)
	}
	var raw []byte
	switch b := c.body.(type) {
	case string:
		raw = []byte(b)
	default:
		var err error
		if raw, err = json.Marshal(b); err != nil {
			t.Fatal(err)
		}
	}
	// The request against the document's request body.
	if inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw)); c.anyBody {
	} else if err == nil {
		reqSchema := h.sp.schema(t, ptr+"/requestBody/content/application~1json/schema")
		verr := reqSchema.Validate(inst)
		switch {
		case verr != nil && !c.invalid:
			t.Errorf("%s: request %s breaks the document: %v", c.route, raw, verr)
		case verr == nil && c.invalid:
			t.Errorf("%s: request %s is refused by the server as invalid but the document accepts it", c.route, raw)
		}
	} else if !c.invalid {
		t.Errorf("%s: request is not JSON: %s", c.route, raw)
	}
	method := c.method
	if method == "" {
		method = http.MethodPost
	}
	h.n++
	req, err := http.NewRequest(method, h.s.App.URL+path, bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	rid := fmt.Sprintf("openapi-%d", h.n)
	req.Header.Set("X-Request-Id", rid)
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := h.s.HTTP.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if h.statuses[c.route] == nil {
		h.statuses[c.route] = map[int]int{}
	}
	h.statuses[c.route][resp.StatusCode]++
	status := fmt.Sprint(resp.StatusCode)
	response := obj(obj(op["responses"])[status])
	if response == nil {
		t.Errorf("%s: answered %d, which the document does not list: %s", c.route, resp.StatusCode, body)
		return answer{status: resp.StatusCode}
	}
	for name, hv := range obj(response["headers"]) {
		def := h.sp.header(obj(hv))
		got := resp.Header.Get(name)
		if got == "" {
			if def["required"] == true {
				t.Errorf("%s %d: no %s header, which the document requires", c.route, resp.StatusCode, name)
			}
			continue
		}
		hs, err := h.sp.compiler.Compile(docURL + headerPointer(ptr, status, name, obj(hv)))
		if err != nil {
			t.Fatal(err)
		}
		if err := hs.Validate(got); err != nil {
			t.Errorf("%s %d: header %s %q breaks the document: %v", c.route, resp.StatusCode, name, got, err)
		}
	}
	if got := resp.Header.Get("X-Request-Id"); got != rid {
		t.Errorf("%s: X-Request-Id %q, sent %q", c.route, got, rid)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("%s %d: Content-Type %q, the document says application/json", c.route, resp.StatusCode, ct)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	if err != nil {
		t.Errorf("%s %d: answer is not JSON: %s", c.route, resp.StatusCode, body)
		return answer{status: resp.StatusCode}
	}
	respSchema := h.sp.schema(t, ptr+"/responses/"+status+"/content/application~1json/schema")
	if err := respSchema.Validate(inst); err != nil {
		t.Errorf("%s %d: answer %s breaks the document: %v", c.route, resp.StatusCode, body, err)
	}
	out := map[string]any{}
	_ = json.Unmarshal(body, &out)
	if resp.StatusCode != http.StatusOK && out["requestId"] != rid {
		t.Errorf("%s %d: error body requestId %v, sent %q", c.route, resp.StatusCode, out["requestId"], rid)
	}
	return answer{status: resp.StatusCode, header: resp.Header, body: out}
}

// headerPointer points at the schema of a response header (inline or in components.headers).
func headerPointer(opPtr, status, name string, h map[string]any) string {
	if ref, ok := h["$ref"].(string); ok {
		return ref + "/schema"
	}
	return opPtr + "/responses/" + status + "/headers/" + escape(name) + "/schema"
}

// ok calls route and requires 200; it returns the answer's body.
func (h *harness) ok(route, token string, body map[string]any) map[string]any {
	h.t.Helper()
	a := h.do(call{route: route, token: token, body: body})
	if a.status != http.StatusOK {
		h.t.Fatalf("%s %v: %d %v", route, body, a.status, a.body)
	}
	h.okBodies[route] = append(h.okBodies[route], body)
	return a.body
}

// fail calls route and requires the status and code; invalid says the body breaks the document.
func (h *harness) fail(route, token string, body any, invalid bool, status int, code string) map[string]any {
	h.t.Helper()
	a := h.do(call{route: route, token: token, body: body, invalid: invalid})
	if a.status != status || a.body["code"] != code {
		h.t.Errorf("%s %v: %d %v, want %d %s", route, body, a.status, a.body, status, code)
	}
	return a.body
}

func get(m map[string]any, key string) map[string]any { return obj(m[key]) }

func str(m map[string]any, key string) string { s, _ := m[key].(string); return s }

func TestEveryJSONRouteMatchesTheDocument(t *testing.T) {
	sp := loadSpec(t)
	mapping := server.JSONMapping()
	s := apptest.Start(t)
	h := &harness{t: t, s: s, sp: sp, prefix: mapping.Prefix, statuses: map[string]map[int]int{}, okBodies: map[string][]map[string]any{}}

	// The document and the server's routes are the same set.
	for path := range obj(sp.doc["paths"]) {
		route, ok := strings.CutPrefix(path, mapping.Prefix)
		if _, known := mapping.Routes[route]; !ok || !known {
			t.Errorf("the document describes %s, which the server has no route for", path)
		}
	}
	for route := range mapping.Routes {
		op, _ := sp.operation(mapping.Prefix + route)
		if op == nil {
			t.Errorf("route %s is not in the document", route)
			continue
		}
		for _, st := range mapping.ErrorStatus {
			if obj(op["responses"])[fmt.Sprint(st)] == nil {
				t.Errorf("%s: the document lists no %d answer", route, st)
			}
		}
	}

	admin := s.AdminToken
	tn := s.NewTenant(t, "oas", "admin")
	tid := tn.ID
	tok := tn.Token

	// Tenancy.
	h.ok("tenants/create", admin, map[string]any{"tenantId": "oas-other", "displayName": "Other"})
	h.fail("tenants/create", tok, map[string]any{"tenantId": "oas-evil"}, false, http.StatusForbidden, "ACCESS_DENIED")
	h.ok("tenants/get", admin, map[string]any{"tenantId": "oas-other"})
	h.ok("tenants/list", admin, map[string]any{"pageSize": 10})
	prn := get(h.ok("principals/create", tok, map[string]any{"tenantId": tid, "kind": "serviceAccount", "displayName": "ci"}), "principal")
	h.ok("principals/list", tok, map[string]any{"tenantId": tid})
	created := h.ok("tokens/create", tok, map[string]any{"tenantId": tid, "principalId": str(prn, "id"), "ttlSeconds": "3600"})
	h.ok("tokens/revoke", tok, map[string]any{"tenantId": tid, "tokenId": str(get(created, "token"), "id")})
	grant := map[string]any{"tenantId": tid, "principalId": str(prn, "id"), "role": "viewer"}
	h.ok("roles/grant", tok, grant)
	h.ok("roles/revoke", tok, map[string]any{"grant": grant})
	h.fail("roles/grant", tok, map[string]any{"tenantId": tid, "principalId": str(prn, "id"), "role": "owner"}, true, http.StatusBadRequest, "INVALID_INPUT")

	// Projects.
	prj := get(h.ok("projects/create", tok, map[string]any{"tenantId": tid, "name": "web"}), "project")
	h.ok("projects/get", tok, map[string]any{"tenantId": tid, "projectId": str(prj, "id")})
	h.ok("projects/list", tok, map[string]any{"tenantId": tid, "pageSize": 5})
	h.fail("projects/get", tok, map[string]any{"tenantId": tid, "projectId": ids.Project + strings.Repeat("0", 26)}, false, http.StatusNotFound, "NOT_FOUND")

	// Accounts, pools (one with a Kubernetes substrate), quotas, substrates.
	acct := get(h.ok("providerAccounts/create", admin, map[string]any{"tenantId": tid, "kind": "digitalocean", "name": "second", "token": "do-secret", "apiUrl": ""}), "account")
	h.ok("providerAccounts/get", tok, map[string]any{"tenantId": tid, "accountId": str(acct, "id")})
	h.ok("providerAccounts/list", tok, map[string]any{"tenantId": tid})
	policy := map[string]any{"flavors": []any{map[string]any{"name": "small", "size": "s-1vcpu-1gb", "count": 1}}, "image": "ubuntu-24-04-x64",
		"substrate": map[string]any{"kind": "kubernetes", "account": str(acct, "id"), "cluster": map[string]any{"create": map[string]any{"region": "nyc3", "version": "1.31"}}}}
	pool := get(h.ok("pools/create", admin, map[string]any{"tenantId": tid, "accountId": str(acct, "id"), "name": "kube", "regions": []any{"nyc3"}, "policy": policy}), "pool")
	poolID := str(pool, "id")
	h.ok("pools/get", tok, map[string]any{"tenantId": tid, "poolId": poolID})
	h.ok("pools/list", tok, map[string]any{"tenantId": tid})
	policy["flavors"] = []any{map[string]any{"name": "small", "size": "s-1vcpu-1gb", "count": 2}}
	h.ok("pools/update", admin, map[string]any{"tenantId": tid, "poolId": poolID, "policy": policy})
	h.ok("substrates/get", tok, map[string]any{"tenantId": tid, "poolId": poolID})
	h.ok("substrates/list", tok, map[string]any{"tenantId": tid, "includeDeleted": true})
	h.ok("quotas/set", admin, map[string]any{"tenantId": tid, "poolId": poolID, "resource": "loadBalancers", "limit": 0})
	h.ok("quotas/list", tok, map[string]any{"tenantId": tid, "poolId": ""})
	h.fail("quotas/set", admin, map[string]any{"tenantId": tid, "poolId": poolID, "resource": "gpus", "limit": 1}, true, http.StatusBadRequest, "INVALID_INPUT")
	fwd := []any{map[string]any{"entryProtocol": "http", "entryPort": 80, "targetProtocol": "http", "targetPort": 8080}}
	h.fail("loadBalancers/create", tok, map[string]any{"tenantId": tid, "poolId": poolID, "name": "over", "region": "nyc3",
		"targets": map[string]any{"pool": true}, "forwarding": fwd, "idempotencyKey": "over-1"}, false, http.StatusTooManyRequests, "QUOTA_EXCEEDED")
	h.ok("pools/archive", admin, map[string]any{"tenantId": tid, "poolId": poolID})

	// Networks and subnets.
	netw := get(h.ok("networks/create", tok, map[string]any{"tenantId": tid, "accountId": tn.AccountID, "name": "vpc"}), "network")
	h.ok("networks/get", tok, map[string]any{"tenantId": tid, "networkId": str(netw, "id")})
	h.ok("networks/list", tok, map[string]any{"tenantId": tid})
	sn := get(h.ok("subnets/create", tok, map[string]any{"tenantId": tid, "networkId": str(netw, "id"), "name": "a", "region": "nyc3", "ipRange": "10.20.0.0/24"}), "subnet")
	h.ok("subnets/get", tok, map[string]any{"tenantId": tid, "subnetId": str(sn, "id")})
	h.ok("subnets/list", tok, map[string]any{"tenantId": tid, "networkId": str(netw, "id")})
	h.fail("subnets/create", tok, map[string]any{"tenantId": tid, "networkId": str(netw, "id"), "name": "b", "region": "nyc3", "ipRange": "10.20.0.0/99"}, true, http.StatusBadRequest, "INVALID_INPUT")

	// Certificates.
	cert := get(h.ok("certificates/create", tok, map[string]any{"tenantId": tid, "accountId": tn.AccountID, "name": "www", "managed": map[string]any{"dnsNames": []any{"www.example.com"}}}), "certificate")
	h.ok("certificates/get", tok, map[string]any{"tenantId": tid, "certificateId": str(cert, "id")})
	h.ok("certificates/list", tok, map[string]any{"tenantId": tid})
	h.fail("certificates/create", tok, map[string]any{"tenantId": tid, "accountId": tn.AccountID, "name": "both",
		"managed": map[string]any{"dnsNames": []any{"a.example.com"}}, "custom": map[string]any{"privateKey": "k", "leafCertificate": "c"}}, true, http.StatusBadRequest, "INVALID_INPUT")

	// Instances.
	inst := get(h.ok("instances/create", tok, map[string]any{"tenantId": tid, "poolId": tn.PoolID, "name": "vm", "region": "nyc3", "flavor": "small",
		"subnetId": str(sn, "id"), "projectId": ""}), "instance")
	h.ok("instances/get", tok, map[string]any{"tenantId": tid, "instanceId": str(inst, "id")})
	h.ok("instances/list", tok, map[string]any{"tenantId": tid, "poolId": tn.PoolID, "includeDeleted": false})

	// Load balancers.
	lbBody := map[string]any{"tenantId": tid, "poolId": tn.PoolID, "projectId": str(prj, "id"), "name": "web", "region": "nyc3", "scope": "",
		"description": "the site", "targets": map[string]any{"pool": true}, "forwarding": fwd, "idempotencyKey": "oas-1",
		"healthCheck":    map[string]any{"protocol": "http", "port": 8080, "path": "/healthz", "intervalSeconds": 10},
		"stickySessions": map[string]any{"cookieName": "bc", "ttlSeconds": 300},
		"domains":        []any{}, "sourceRanges": map[string]any{"allow": []any{"203.0.113.0/24"}}, "redirectHttpToHttps": false}
	lb := get(h.ok("loadBalancers/create", tok, lbBody), "loadBalancer")
	lbID := str(lb, "id")
	h.ok("loadBalancers/get", tok, map[string]any{"tenantId": tid, "loadBalancerId": lbID})
	h.ok("loadBalancers/list", tok, map[string]any{"tenantId": tid, "projectId": str(prj, "id")})
	h.ok("loadBalancers/update", tok, map[string]any{"tenantId": tid, "loadBalancerId": lbID, "redirectHttpToHttps": true, "stickySessions": nil})
	h.fail("loadBalancers/update", tok, map[string]any{"tenantId": tid, "loadBalancerId": lbID, "nonsense": 1}, true, http.StatusBadRequest, "INVALID_INPUT")
	h.fail("loadBalancers/create", tok, map[string]any{"tenantId": tid, "poolId": tn.PoolID, "name": "Bad Name", "region": "nyc3",
		"targets": map[string]any{"pool": true}, "forwarding": fwd, "idempotencyKey": "oas-2"}, true, http.StatusBadRequest, "INVALID_INPUT")
	h.ok("loadBalancers/delete", tok, map[string]any{"tenantId": tid, "loadBalancerId": lbID})
	h.ok("instances/delete", tok, map[string]any{"tenantId": tid, "instanceId": str(inst, "id")})
	h.ok("subnets/delete", tok, map[string]any{"tenantId": tid, "subnetId": str(sn, "id")})
	h.ok("certificates/delete", tok, map[string]any{"tenantId": tid, "certificateId": str(cert, "id")})

	// Events and usage (one metered record, as the reconciler would open it).
	if err := store.StartUsage(t.Context(), s.App.DB.Q(), store.UsageRecord{ID: ids.New(ids.UsageRecord), TenantID: tid, Meter: "vps.load-balancer.hours", ResourceID: lbID}); err != nil {
		t.Fatal(err)
	}
	evs := h.ok("events/list", tok, map[string]any{"tenantId": tid, "after": "0", "limit": 100})
	if list, _ := evs["events"].([]any); len(list) == 0 {
		t.Errorf("events/list: no events after the writes above: %v", evs)
	}
	h.ok("events/list", tok, map[string]any{"tenantId": tid, "resourceId": lbID})
	use := h.ok("usage/list", tok, map[string]any{"tenantId": tid, "startTime": "2020-01-01T00:00:00Z", "meter": "vps.load-balancer.hours"})
	if list, _ := use["records"].([]any); len(list) != 1 {
		t.Errorf("usage/list: %v", use)
	}
	h.fail("usage/list", tok, map[string]any{"tenantId": tid, "startTime": "yesterday"}, true, http.StatusBadRequest, "INVALID_INPUT")

	// Metal: every verb from a state that allows it (states set as the reconciler would).
	bmc := map[string]any{"address": "192.0.2.10", "port": 0, "protocol": "redfish", "username": "admin", "password": "pw", "insecureTls": true}
	n1 := str(get(h.ok("metal/enroll", tok, map[string]any{"tenantId": tid, "name": "rack1-u1", "bmc": bmc}), "node"), "id")
	n2 := str(get(h.ok("metal/enroll", tok, map[string]any{"tenantId": tid, "name": "rack1-u2", "bmc": map[string]any{"address": "bmc2.example.com", "port": 443, "protocol": "ipmi", "username": "admin", "password": "pw"}}), "node"), "id")
	h.ok("metal/get", tok, map[string]any{"tenantId": tid, "nodeId": n1})
	h.ok("metal/list", tok, map[string]any{"tenantId": tid, "state": ""})
	h.ok("metal/list", tok, map[string]any{"tenantId": tid, "state": "enrolled"})
	h.fail("metal/deploy", tok, map[string]any{"tenantId": tid, "nodeId": n1}, false, http.StatusConflict, "INVALID_STATE")
	h.ok("metal/inspect", tok, map[string]any{"tenantId": tid, "nodeId": n1})
	h.ok("metal/abort", tok, map[string]any{"tenantId": tid, "nodeId": n1})
	h.ok("metal/retire", tok, map[string]any{"tenantId": tid, "nodeId": n1})
	setState := func(id, state string) {
		t.Helper()
		if _, err := s.App.DB.Q().Exec(t.Context(), `UPDATE metal_nodes SET state = $2 WHERE id = $1`, id, state); err != nil {
			t.Fatal(err)
		}
	}
	setState(n2, "inspected")
	h.ok("metal/commission", tok, map[string]any{"tenantId": tid, "nodeId": n2})
	setState(n2, "ready")
	h.ok("metal/deploy", tok, map[string]any{"tenantId": tid, "nodeId": n2, "image": "https://images.example.com/ubuntu.img"})
	setState(n2, "deployed")
	h.ok("metal/rescue", tok, map[string]any{"tenantId": tid, "nodeId": n2})
	setState(n2, "rescue")
	h.ok("metal/unrescue", tok, map[string]any{"tenantId": tid, "nodeId": n2})
	setState(n2, "deployed")
	h.ok("metal/release", tok, map[string]any{"tenantId": tid, "nodeId": n2})
	h.ok("metal/updateCredentials", tok, map[string]any{"tenantId": tid, "nodeId": n2, "username": "root", "password": "new"})
	h.fail("metal/enroll", tok, map[string]any{"tenantId": tid, "name": "x", "bmc": map[string]any{"address": "192.0.2.11", "port": 70000, "protocol": "redfish", "username": "a", "password": "b"}}, true, http.StatusBadRequest, "INVALID_INPUT")

	// Every route: without a token (401), with a method other than POST (405), with a body that
	// is not JSON and with an unknown field (400).
	routes := make([]string, 0, len(mapping.Routes))
	for r := range mapping.Routes {
		routes = append(routes, r)
	}
	sort.Strings(routes)
	for _, r := range routes {
		// Validation comes first: a body the server took, sent without a token.
		valid := map[string]any{}
		if len(h.okBodies[r]) > 0 {
			valid = h.okBodies[r][0]
		}
		if a := h.do(call{route: r, body: valid}); a.status != http.StatusUnauthorized || a.body["code"] != "UNAUTHENTICATED" {
			t.Errorf("%s without a token: %d %v", r, a.status, a.body)
		}
		a := h.do(call{route: r, token: tok, body: map[string]any{}, method: http.MethodGet, anyBody: true})
		if a.status != http.StatusMethodNotAllowed || a.header.Get("Allow") != http.MethodPost {
			t.Errorf("%s GET: %d %v", r, a.status, a.body)
		}
		h.fail(r, tok, "{not json", true, http.StatusBadRequest, "INVALID_INPUT")
		h.fail(r, tok, map[string]any{"noSuchField": true}, true, http.StatusBadRequest, "INVALID_INPUT")
	}

	// What the document marks required is: each succeeding body without it is refused by the
	// document and the server alike.
	dropped := 0
	for _, r := range routes {
		_, ptr := sp.operation(mapping.Prefix + r)
		schema := resolve(sp, ptr+"/requestBody/content/application~1json/schema")
		for _, key := range requiredOf(schema) {
			for _, body := range h.okBodies[r][:min(1, len(h.okBodies[r]))] {
				if _, ok := body[key]; !ok {
					t.Errorf("%s: a body the server took has no %s, which the document requires: %v", r, key, body)
					continue
				}
				without := map[string]any{}
				for k, v := range body {
					if k != key {
						without[k] = v
					}
				}
				a := h.do(call{route: r, token: admin, body: without, invalid: true})
				if a.status != http.StatusBadRequest || a.body["code"] != "INVALID_INPUT" {
					t.Errorf("%s without %s: %d %v, the document says it is required", r, key, a.status, a.body)
				}
				dropped++
			}
		}
	}

	// Coverage: every route answered 200 and an error, every status the document was shown.
	for _, r := range routes {
		st := h.statuses[r]
		if st[http.StatusOK] == 0 {
			t.Errorf("route %s: no call answered 200", r)
		}
		errs := 0
		for code, n := range st {
			if code != http.StatusOK {
				errs += n
			}
		}
		if errs == 0 {
			t.Errorf("route %s: no call answered an error", r)
		}
	}
	seen := map[int]bool{}
	for _, st := range h.statuses {
		for code := range st {
			seen[code] = true
		}
	}
	for _, want := range []int{200, 400, 401, 403, 404, 405, 409, 429} {
		if !seen[want] {
			t.Errorf("no call answered %d", want)
		}
	}
	var codes []int
	for c := range seen {
		codes = append(codes, c)
	}
	slices.Sort(codes)
	t.Logf("%d calls on %d routes validated against the document, statuses %v; %d required fields left out", h.n, len(routes), codes, dropped)
}

// resolve follows a $ref to the schema object it names.
func resolve(sp *spec, pointer string) map[string]any {
	var cur any = sp.doc
	for _, tok := range strings.Split(strings.TrimPrefix(pointer, "#/"), "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		cur = obj(cur)[tok]
	}
	m := obj(cur)
	if ref, ok := m["$ref"].(string); ok {
		return resolve(sp, ref)
	}
	return m
}

func requiredOf(schema map[string]any) []string {
	var out []string
	list, _ := schema["required"].([]any)
	for _, r := range list {
		out = append(out, r.(string))
	}
	return out
}
