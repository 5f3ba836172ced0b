// Package conventions checks the API conventions a load balancer's users expect, through the
// JSON mapping as curl would drive them: validateOnly (AIP-163) decides everything and writes
// nothing, etags (AIP-154) refuse a change decided on a stale read, and deletion protection
// refuses deletes.
package conventions

import (
	"maps"
	"net/http"
	"strings"
	"testing"

	"better-compute.dev/compute/app/apptest"
	v1 "better-compute.dev/compute/gen/go/bettercompute/compute/v1"
)

// answer is what the comparison of two calls looks at.
type answer struct {
	status           int
	code, field, why string
}

func answerOf(status int, got map[string]any) answer {
	a := answer{status: status}
	a.code, _ = got["code"].(string)
	a.field, _ = got["field"].(string)
	a.why, _ = got["stateReason"].(string)
	return a
}

func lbBody(tn apptest.Tenant, name, key string) map[string]any {
	return map[string]any{
		"tenantId": tn.ID, "poolId": tn.PoolID, "name": name, "region": "nyc3", "targets": map[string]any{"pool": true},
		"forwarding":     []any{map[string]any{"entryProtocol": "http", "entryPort": 80, "targetProtocol": "http", "targetPort": 8080}},
		"idempotencyKey": key,
	}
}

// TestValidateOnlyAnswersAsTheCallAndWritesNothing: every error case of the seed's create table
// answers the same with and without validateOnly; a successful validateOnly create, update or
// delete answers the resource as it would be and changes no table.
func TestValidateOnlyAnswersAsTheCallAndWritesNothing(t *testing.T) {
	s := apptest.Start(t)
	tn := s.NewTenant(t, "vo", "editor")
	other := s.NewTenant(t, "vo-other", "editor")
	theirs := s.MachineInstance(t, other, "nyc3", "")
	// A pool with one unit, already taken, for the quota case.
	full := s.NewPool(t, tn.ID, tn.AccountID, "full", 1)
	if status, got := s.PostJSON(t, "/api/compute/loadBalancers/create", tn.Token, func() map[string]any {
		b := lbBody(tn, "taken", "taken")
		b["poolId"] = full
		return b
	}()); status != http.StatusOK {
		t.Fatalf("fill the pool: %d %v", status, got)
	}
	if status, got := s.PostJSON(t, "/api/compute/loadBalancers/create", tn.Token, lbBody(tn, "existing", "existing")); status != http.StatusOK {
		t.Fatalf("create: %d %v", status, got)
	}
	cases := map[string]func(b map[string]any){
		"unknown pool":              func(b map[string]any) { b["poolId"] = "pool_" + strings.Repeat("0", 26) },
		"no quota left":             func(b map[string]any) { b["poolId"] = full },
		"name taken":                func(b map[string]any) { b["name"] = "existing" },
		"region outside the pool":   func(b map[string]any) { b["region"] = "ams3" },
		"another tenant's instance": func(b map[string]any) { b["targets"] = map[string]any{"instanceIds": []any{theirs.GetId()}} },
		"unknown certificate": func(b map[string]any) {
			b["forwarding"] = []any{map[string]any{"entryProtocol": "https", "entryPort": 443, "targetProtocol": "http", "targetPort": 8080,
				"certificateId": "cert_" + strings.Repeat("0", 26)}}
		},
		"bad port": func(b map[string]any) {
			b["forwarding"] = []any{map[string]any{"entryProtocol": "http", "entryPort": 0, "targetProtocol": "http", "targetPort": 8080}}
		},
		"no targets": func(b map[string]any) { delete(b, "targets") },
	}
	for name, set := range cases {
		before := s.RowCounts(t)
		b := lbBody(tn, "case", "case-"+strings.ReplaceAll(name, " ", "-"))
		set(b)
		rehearsal := maps.Clone(b)
		rehearsal["validateOnly"] = true
		ra := answerOf(s.PostJSON(t, "/api/compute/loadBalancers/create", tn.Token, rehearsal))
		if after := s.RowCounts(t); !maps.Equal(before, after) {
			t.Errorf("%s: validateOnly wrote rows", name)
		}
		ca := answerOf(s.PostJSON(t, "/api/compute/loadBalancers/create", tn.Token, b))
		if ra != ca || ca.status == http.StatusOK {
			t.Errorf("%s: validateOnly answers %+v, the call %+v (want the same error)", name, ra, ca)
		}
	}

	// Successes write nothing and answer as the call would.
	before := s.RowCounts(t)
	b := lbBody(tn, "rehearsed", "rehearsed")
	b["validateOnly"] = true
	status, got := s.PostJSON(t, "/api/compute/loadBalancers/create", tn.Token, b)
	lb, _ := got["loadBalancer"].(map[string]any)
	if status != http.StatusOK || lb["name"] != "rehearsed" || lb["state"] != "pending" {
		t.Fatalf("validateOnly create: %d %v", status, got)
	}
	if after := s.RowCounts(t); !maps.Equal(before, after) {
		t.Errorf("a validateOnly create wrote rows: %v -> %v", before, after)
	}
	// The real call with the same key is then made as if the rehearsal never happened.
	delete(b, "validateOnly")
	status, got = s.PostJSON(t, "/api/compute/loadBalancers/create", tn.Token, b)
	if status != http.StatusOK {
		t.Fatalf("create after its rehearsal: %d %v", status, got)
	}
	id := got["loadBalancer"].(map[string]any)["id"].(string)
	// A rehearsal of the same keyed create is answered as its replay.
	b["validateOnly"] = true
	if status, got := s.PostJSON(t, "/api/compute/loadBalancers/create", tn.Token, b); status != http.StatusOK || got["loadBalancer"].(map[string]any)["id"] != id {
		t.Errorf("validateOnly of a made keyed create: %d %v, want its replay", status, got)
	}

	before = s.RowCounts(t)
	status, got = s.PostJSON(t, "/api/compute/loadBalancers/update", tn.Token, map[string]any{"tenantId": tn.ID, "loadBalancerId": id, "redirectHttpToHttps": true, "validateOnly": true})
	if status != http.StatusOK || got["loadBalancer"].(map[string]any)["redirectHttpToHttps"] != true {
		t.Errorf("validateOnly update: %d %v", status, got)
	}
	status, got = s.PostJSON(t, "/api/compute/loadBalancers/delete", tn.Token, map[string]any{"tenantId": tn.ID, "loadBalancerId": id, "validateOnly": true})
	if status != http.StatusOK || got["loadBalancer"].(map[string]any)["state"] != "deleting" {
		t.Errorf("validateOnly delete: %d %v", status, got)
	}
	if after := s.RowCounts(t); !maps.Equal(before, after) {
		t.Errorf("validateOnly update and delete wrote rows: %v -> %v", before, after)
	}
	_, got = s.PostJSON(t, "/api/compute/loadBalancers/get", tn.Token, map[string]any{"tenantId": tn.ID, "loadBalancerId": id})
	if lb := got["loadBalancer"].(map[string]any); lb["redirectHttpToHttps"] == true || lb["state"] != "pending" {
		t.Errorf("after the rehearsals: %v, want it unchanged", lb)
	}
}

// TestEtagsRefuseStaleChanges: an update or delete carrying the etag of an older version is
// INVALID_STATE etagMismatch and writes nothing, in the body or as If-Match; the current etag
// is accepted; without one the last writer wins.
func TestEtagsRefuseStaleChanges(t *testing.T) {
	s := apptest.Start(t)
	tn := s.NewTenant(t, "etag", "editor")
	status, got := s.PostJSON(t, "/api/compute/loadBalancers/create", tn.Token, lbBody(tn, "web", "web"))
	if status != http.StatusOK {
		t.Fatalf("create: %d %v", status, got)
	}
	lb := got["loadBalancer"].(map[string]any)
	id, first := lb["id"].(string), lb["etag"].(string)
	if first == "" {
		t.Fatalf("no etag: %v", lb)
	}
	update := func(extra map[string]any, header string) (int, map[string]any) {
		body := map[string]any{"tenantId": tn.ID, "loadBalancerId": id}
		maps.Copy(body, extra)
		if header == "" {
			return s.PostJSON(t, "/api/compute/loadBalancers/update", tn.Token, body)
		}
		return postWithHeader(t, s, "/api/compute/loadBalancers/update", tn.Token, body, "If-Match", header)
	}
	status, got = update(map[string]any{"redirectHttpToHttps": true, "etag": first}, "")
	second, _ := got["loadBalancer"].(map[string]any)["etag"].(string)
	if status != http.StatusOK || second == "" || second == first {
		t.Fatalf("update with the current etag: %d %v (etag %q -> %q)", status, got, first, second)
	}
	before := s.RowCounts(t)
	for name, call := range map[string]func() (int, map[string]any){
		"stale etag in the body": func() (int, map[string]any) {
			return update(map[string]any{"redirectHttpToHttps": false, "etag": first}, "")
		},
		"stale If-Match": func() (int, map[string]any) {
			return update(map[string]any{"redirectHttpToHttps": false}, `"`+first+`"`)
		},
		"stale etag on delete": func() (int, map[string]any) {
			return s.PostJSON(t, "/api/compute/loadBalancers/delete", tn.Token, map[string]any{"tenantId": tn.ID, "loadBalancerId": id, "etag": first})
		},
	} {
		a := answerOf(call())
		if a.status != http.StatusConflict || a.code != "INVALID_STATE" || a.why != "etagMismatch" {
			t.Errorf("%s: %+v, want 409 INVALID_STATE etagMismatch", name, a)
		}
	}
	if after := s.RowCounts(t); !maps.Equal(before, after) {
		t.Errorf("a refused stale change wrote rows")
	}
	_, got = s.PostJSON(t, "/api/compute/loadBalancers/get", tn.Token, map[string]any{"tenantId": tn.ID, "loadBalancerId": id})
	if lb := got["loadBalancer"].(map[string]any); lb["etag"] != second || lb["redirectHttpToHttps"] != true {
		t.Errorf("after the refusals: %v, want etag %s and the second version's settings", lb, second)
	}
	// If-Match with the current etag, then no etag at all: both apply.
	if status, got := update(map[string]any{"redirectHttpToHttps": false}, `W/"`+second+`"`); status != http.StatusOK {
		t.Errorf("If-Match with the current etag: %d %v", status, got)
	}
	if status, got := update(map[string]any{"redirectHttpToHttps": true}, ""); status != http.StatusOK {
		t.Errorf("update without an etag: %d %v", status, got)
	}
	// Connect callers read the same etag and get the same refusal.
	cur, err := s.App.LoadBalancers.GetLoadBalancer(tn.Ctx, &v1.GetLoadBalancerRequest{TenantId: tn.ID, LoadBalancerId: id})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.App.LoadBalancers.UpdateLoadBalancer(tn.Ctx, &v1.UpdateLoadBalancerRequest{TenantId: tn.ID, LoadBalancerId: id, Etag: second}); err == nil || !strings.Contains(err.Error(), "etag") {
		t.Errorf("core update with a stale etag: %v", err)
	}
	if _, err := s.App.LoadBalancers.DeleteLoadBalancer(tn.Ctx, &v1.DeleteLoadBalancerRequest{TenantId: tn.ID, LoadBalancerId: id, Etag: cur.GetEtag()}); err != nil {
		t.Errorf("delete with the current etag: %v", err)
	}
}

// TestDeletionProtection: a protected load balancer refuses deletes with INVALID_STATE
// deletionProtected until an update turns the protection off.
func TestDeletionProtection(t *testing.T) {
	s := apptest.Start(t)
	tn := s.NewTenant(t, "keep", "editor")
	b := lbBody(tn, "kept", "kept")
	b["deletionProtection"] = true
	status, got := s.PostJSON(t, "/api/compute/loadBalancers/create", tn.Token, b)
	if status != http.StatusOK || got["loadBalancer"].(map[string]any)["deletionProtection"] != true {
		t.Fatalf("create protected: %d %v", status, got)
	}
	id := got["loadBalancer"].(map[string]any)["id"].(string)
	del := func() answer {
		return answerOf(s.PostJSON(t, "/api/compute/loadBalancers/delete", tn.Token, map[string]any{"tenantId": tn.ID, "loadBalancerId": id}))
	}
	before := s.RowCounts(t)
	if a := del(); a.status != http.StatusConflict || a.code != "INVALID_STATE" || a.why != "deletionProtected" {
		t.Fatalf("delete of a protected load balancer: %+v, want 409 INVALID_STATE deletionProtected", a)
	}
	if after := s.RowCounts(t); !maps.Equal(before, after) {
		t.Errorf("the refused delete wrote rows")
	}
	status, got = s.PostJSON(t, "/api/compute/loadBalancers/update", tn.Token, map[string]any{"tenantId": tn.ID, "loadBalancerId": id, "deletionProtection": false})
	if status != http.StatusOK || got["loadBalancer"].(map[string]any)["deletionProtection"] != false {
		t.Fatalf("turn protection off: %d %v", status, got)
	}
	if a := del(); a.status != http.StatusOK {
		t.Errorf("delete once unprotected: %+v", a)
	}
}

// postWithHeader is PostJSON with one more request header.
func postWithHeader(t *testing.T, s *apptest.Stack, path, token string, body map[string]any, name, value string) (int, map[string]any) {
	t.Helper()
	return s.PostJSONWith(t, path, token, body, http.Header{name: []string{value}})
}
