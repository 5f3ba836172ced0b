package openapi

import (
	"hash/fnv"
	"math/rand/v2"
	"net/http"
	"slices"
	"sort"
	"strings"
	"testing"

	"better-compute.dev/compute/app/apptest"
	"better-compute.dev/compute/openapi"
	"better-compute.dev/compute/server"
)

// requestsPerCaller is how many generated requests each operation gets from each caller.
const requestsPerCaller = 3

// TestGeneratedRequestsAreRefusedOnlyForDocumentedReasons makes requests from the served
// document alone (schema-valid by construction, checked by the validator), for every operation,
// as a tenant and as a platform admin, naming the tenant's objects where the schema names ids, and
// sends them through the JSON mapping to a real replica. Each answer is a success or a refusal
// for a documented reason: existence (NOT_FOUND), permission (ACCESS_DENIED), state
// (INVALID_STATE), quota (QUOTA_EXCEEDED), or INVALID_INPUT naming a field the operation's x-rules
// cover. A refusal for a rule the document does not state, INTERNAL or anything else fails.
func TestGeneratedRequestsAreRefusedOnlyForDocumentedReasons(t *testing.T) {
	sp := loadSpec(t)
	mapping := server.JSONMapping()
	s := apptest.Start(t)
	h := &harness{t: t, s: s, sp: sp, prefix: mapping.Prefix, statuses: map[string]map[int]int{}, okBodies: map[string][]map[string]any{}}

	tn := s.NewTenant(t, "gen", "admin")
	objects := s.ObjectOfEveryKind(t, tn, "mine")
	byPrefix := map[string]string{}
	var anyIDs []string
	for _, id := range objects {
		if p, _, ok := strings.Cut(id, "_"); ok {
			byPrefix[p+"_"] = id
			anyIDs = append(anyIDs, id)
		}
	}
	sort.Strings(anyIDs)
	known := map[string][]any{
		"region":     {"nyc3"},
		"flavor":     {"small"},
		"size":       {"s-1vcpu-1gb"},
		"image":      {"ubuntu-24-04-x64"},
		"apiUrl":     {s.SimulatorURL},
		"ipRange":    {"10.40.0.0/24", "10.41.0.0/20"},
		"objectType": {"project", "loadBalancer", "instance", "network", "pool"},
	}

	// Reads and creates first, then what removes or changes state, so that the objects the
	// requests name live as long as possible.
	routes := make([]string, 0, len(mapping.Routes))
	for r := range mapping.Routes {
		routes = append(routes, r)
	}
	destructive := func(r string) bool {
		_, verb, _ := strings.Cut(r, "/")
		return slices.Contains([]string{"delete", "revoke", "archive", "retire", "release"}, verb)
	}
	sort.Slice(routes, func(i, j int) bool {
		if di, dj := destructive(routes[i]), destructive(routes[j]); di != dj {
			return dj
		}
		return routes[i] < routes[j]
	})

	codes := map[string]int{}
	okRoutes := 0
	var neverOK []string
	for _, route := range routes {
		_, ptr := sp.operation(mapping.Prefix + route)
		op := resolve(sp, ptr)
		var rules []openapi.Rule
		for _, r := range op["x-rules"].([]any) {
			rules = append(rules, openapi.Rule{Field: str(obj(r), "field"), Rule: str(obj(r), "rule")})
		}
		seed := fnv.New64a()
		seed.Write([]byte(route))
		m := &maker{t: t, sp: sp, rnd: rand.New(rand.NewPCG(seed.Sum64(), 34)), byPrefix: byPrefix, anyIDs: anyIDs, known: known, tenant: tn.ID}
		answered := false
		for _, token := range []string{tn.Token, s.AdminToken} {
			for range requestsPerCaller {
				body, err := m.request(ptr + "/requestBody/content/application~1json/schema")
				if err != nil {
					t.Errorf("%s: no schema-valid request made: %v", route, err)
					continue
				}
				a := h.do(call{route: route, token: token, body: body})
				code, _ := a.body["code"].(string)
				if a.status == http.StatusOK {
					code = "OK"
					answered = true
				}
				codes[code]++
				switch code {
				case "OK", "NOT_FOUND", "ACCESS_DENIED", "INVALID_STATE", "QUOTA_EXCEEDED":
				case "INVALID_INPUT":
					field, _ := a.body["field"].(string)
					if !slices.ContainsFunc(rules, func(r openapi.Rule) bool { return openapi.Covers(r.Field, field) }) {
						t.Errorf("%s: schema-valid request %v refused for a rule the operation does not document (field %q): %v", route, body, field, a.body["message"])
					}
				default:
					t.Errorf("%s: schema-valid request %v answered %d %v", route, body, a.status, a.body)
				}
			}
		}
		if answered {
			okRoutes++
		} else {
			neverOK = append(neverOK, route)
		}
	}
	t.Logf("%d generated requests on %d operations (%d answered 200 at least once): %v; never 200: %v", h.n, len(routes), okRoutes, codes, neverOK)
	if codes["OK"] == 0 || okRoutes < len(routes)/2 {
		t.Errorf("only %d operations took a generated request: the generator makes too few requests the server can take", okRoutes)
	}
}
