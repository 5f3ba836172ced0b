package server_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"better-compute.dev/compute/app/apptest"
	v1 "better-compute.dev/compute/gen/go/bettercompute/compute/v1"
	idgen "better-compute.dev/compute/ids"
	"better-compute.dev/compute/store"
)

// seedLoadBalancers inserts n load balancers of tn straight through the store (the API would
// take minutes), in one transaction, and returns their ids in creation order.
func seedLoadBalancers(t *testing.T, s *apptest.Stack, tn apptest.Tenant, n int) []string {
	t.Helper()
	out := make([]string, 0, n)
	err := store.ExecuteTx(t.Context(), s.App.DB, func(tx store.Tx) error {
		out = out[:0]
		for i := range n {
			row, err := store.InsertLoadBalancer(t.Context(), tx, store.LoadBalancer{
				ID: idgen.New(idgen.LoadBalancer), TenantID: tn.ID, PoolID: tn.PoolID, AccountID: tn.AccountID,
				Name: fmt.Sprintf("seed-%d", i), Scope: "regional", Region: "nyc3", Spec: []byte(`{"targets":{"pool":true}}`),
			})
			if err != nil {
				return err
			}
			out = append(out, row.ID)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestListPagesBeyondAThousand: a tenant with 1,050 load balancers lists every one exactly once
// by pages through the JSON mapping while others are created and deleted meanwhile; the default
// answer stays the first 1000 (with a token for the rest).
func TestListPagesBeyondAThousand(t *testing.T) {
	s := apptest.Start(t)
	tn := s.NewTenant(t, "acme", "editor")
	if _, err := s.App.Pools.SetQuota(s.AdminCtx, &v1.SetQuotaRequest{TenantId: tn.ID, PoolId: tn.PoolID, Resource: "loadBalancers", Limit: 100}); err != nil {
		t.Fatal(err)
	}
	seeded := seedLoadBalancers(t, s, tn, 1050)

	status, got := s.PostJSON(t, "/api/compute/loadBalancers/list", tn.Token, map[string]any{"tenantId": tn.ID})
	if status != http.StatusOK || len(got["loadBalancers"].([]any)) != 1000 || got["nextPageToken"] == "" {
		t.Fatalf("default answer: %d, %d items", status, len(got["loadBalancers"].([]any)))
	}
	if first := got["loadBalancers"].([]any)[0].(map[string]any)["id"]; first != seeded[0] {
		t.Fatalf("default answer starts at %v, want %s", first, seeded[0])
	}

	// Meanwhile: 20 creates through the API, 30 deletes of seeded ones (10 marked deleted
	// outright so they leave the list).
	ctx, stop := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	var bgErr error
	var mu sync.Mutex
	fail := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		if bgErr == nil {
			bgErr = err
		}
	}
	deleted := map[string]bool{}
	for i := 0; i < 30; i++ {
		deleted[seeded[100+i*30]] = true
	}
	wg.Add(2)
	go func() {
		defer wg.Done()
		for i := 0; i < 20 && ctx.Err() == nil; i++ {
			req := createRequest(tn, fmt.Sprintf("bg-%d", i))
			req.Name = fmt.Sprintf("bg-%d", i)
			if _, err := s.App.LoadBalancers.CreateLoadBalancer(tn.Ctx, req); err != nil {
				fail(err)
			}
		}
	}()
	go func() {
		defer wg.Done()
		i := 0
		for id := range deleted {
			if i%3 == 0 {
				_, err := store.RecordLoadBalancerObservation(context.Background(), s.App.DB.Q(), store.LoadBalancerObservation{ID: id, State: "deleted", MarkDeleted: true})
				if err != nil {
					fail(err)
				}
			} else if _, err := s.App.LoadBalancers.DeleteLoadBalancer(tn.Ctx, &v1.DeleteLoadBalancerRequest{TenantId: tn.ID, LoadBalancerId: id}); err != nil {
				fail(err)
			}
			i++
		}
	}()

	seen := map[string]int{}
	token, pages := "", 0
	for {
		body := map[string]any{"tenantId": tn.ID, "pageSize": 100}
		if token != "" {
			body["pageToken"] = token
		}
		status, got := s.PostJSON(t, "/api/compute/loadBalancers/list", tn.Token, body)
		if status != http.StatusOK {
			t.Fatalf("page %d: %d %v", pages, status, got)
		}
		items, _ := got["loadBalancers"].([]any)
		if len(items) > 100 {
			t.Fatalf("page %d has %d items", pages, len(items))
		}
		for _, it := range items {
			seen[it.(map[string]any)["id"].(string)]++
		}
		pages++
		token, _ = got["nextPageToken"].(string)
		if token == "" {
			break
		}
	}
	stop()
	wg.Wait()
	if bgErr != nil {
		t.Fatal(bgErr)
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("%s listed %d times", id, n)
		}
	}
	for _, id := range seeded {
		if !deleted[id] && seen[id] != 1 {
			t.Errorf("seeded %s, never deleted, listed %d times", id, seen[id])
		}
	}
	if pages < 11 {
		t.Errorf("%d pages for more than 1,020 load balancers at 100 a page", pages)
	}
}

// TestPageTokenIsBound: a changed token, another tenant's, or one of other filters is
// INVALID_INPUT pageToken; pageSize outside 1-1000 is INVALID_INPUT pageSize.
func TestPageTokenIsBound(t *testing.T) {
	s := apptest.Start(t)
	a := s.NewTenant(t, "acme", "editor")
	b := s.NewTenant(t, "globex", "editor")
	seedLoadBalancers(t, s, a, 3)
	seedLoadBalancers(t, s, b, 3)
	status, got := s.PostJSON(t, "/api/compute/loadBalancers/list", a.Token, map[string]any{"tenantId": a.ID, "pageSize": 1})
	tok, _ := got["nextPageToken"].(string)
	if status != http.StatusOK || len(got["loadBalancers"].([]any)) != 1 || tok == "" {
		t.Fatalf("first page: %d %v", status, got)
	}
	last := tok[len(tok)-2:]
	flipped := tok[:len(tok)-2] + map[bool]string{true: "AA", false: "AB"}[last != "AA"]
	cases := []struct {
		name  string
		token string
		body  map[string]any
		field string
	}{
		{"tampered", b.Token, map[string]any{"tenantId": b.ID, "pageToken": flipped}, "pageToken"},
		{"tampered, own tenant", a.Token, map[string]any{"tenantId": a.ID, "pageToken": flipped}, "pageToken"},
		{"another tenant's", b.Token, map[string]any{"tenantId": b.ID, "pageToken": tok}, "pageToken"},
		{"other filters", a.Token, map[string]any{"tenantId": a.ID, "pageToken": tok, "includeDeleted": true}, "pageToken"},
		{"not a token", a.Token, map[string]any{"tenantId": a.ID, "pageToken": "plb_whatever"}, "pageToken"},
		{"pageSize too large", a.Token, map[string]any{"tenantId": a.ID, "pageSize": 1001}, "pageSize"},
		{"pageSize negative", a.Token, map[string]any{"tenantId": a.ID, "pageSize": -1}, "pageSize"},
	}
	for _, c := range cases {
		status, e := s.PostJSON(t, "/api/compute/loadBalancers/list", c.token, c.body)
		if status != http.StatusBadRequest || e["code"] != "INVALID_INPUT" || e["field"] != c.field {
			t.Errorf("%s: %d %v", c.name, status, e)
		}
	}
	status, got = s.PostJSON(t, "/api/compute/loadBalancers/list", a.Token, map[string]any{"tenantId": a.ID, "pageSize": 1, "pageToken": tok})
	if status != http.StatusOK || len(got["loadBalancers"].([]any)) != 1 {
		t.Fatalf("second page: %d %v", status, got)
	}
}

// listCase is one list method as TestEveryListPages drives it through the JSON mapping.
type listCase struct {
	rpc   string // "ListInstances"
	route string // "instances/list"
	items string // the answer's key of the items
	admin bool   // listed by a platform admin (tenants)
	// byID: the list is in id order (ids are time-ordered), so its default answer is sorted.
	byID bool
	// seed makes one item of tn straight through the store and returns its identity (idOf).
	seed func(t *testing.T, tn apptest.Tenant, i int) string
	// drop takes the item out of the list (deleted, or marked deleted where the list hides those).
	drop func(t *testing.T, id string)
	idOf func(item map[string]any) string // nil: item["id"]
}

func exec(t *testing.T, s *apptest.Stack, sql string, args ...any) {
	t.Helper()
	if _, err := s.App.DB.Q().Exec(t.Context(), sql, args...); err != nil {
		t.Fatal(err)
	}
}

// listCases are every list method but events/list (its own cursor).
func listCases(s *apptest.Stack) map[string]listCase {
	ctx := context.Background()
	q := s.App.DB.Q()
	must := func(t *testing.T, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	mark := func(table string) func(t *testing.T, id string) {
		return func(t *testing.T, id string) {
			exec(t, s, "UPDATE "+table+" SET state = 'deleted' WHERE id = $1", id)
		}
	}
	del := func(table string) func(t *testing.T, id string) {
		return func(t *testing.T, id string) { exec(t, s, "DELETE FROM "+table+" WHERE id = $1", id) }
	}
	pool := func(t *testing.T, tn apptest.Tenant, i int) store.Pool {
		p, err := store.InsertPool(ctx, q, store.Pool{ID: idgen.New(idgen.Pool), TenantID: tn.ID, AccountID: tn.AccountID,
			Name: fmt.Sprintf("seed-%d", i), Regions: []string{"nyc3"}, Policy: []byte(`{}`)})
		must(t, err)
		return p
	}
	return map[string]listCase{
		"loadBalancers": {rpc: "ListLoadBalancers", route: "loadBalancers/list", items: "loadBalancers", drop: mark("load_balancers"),
			seed: func(t *testing.T, tn apptest.Tenant, i int) string {
				row, err := store.InsertLoadBalancer(ctx, q, store.LoadBalancer{ID: idgen.New(idgen.LoadBalancer), TenantID: tn.ID,
					PoolID: tn.PoolID, AccountID: tn.AccountID, Name: fmt.Sprintf("seed-%d", i), Scope: "regional", Region: "nyc3",
					Spec: []byte(`{"targets":{"pool":true}}`)})
				must(t, err)
				return row.ID
			}},
		"instances": {rpc: "ListInstances", route: "instances/list", items: "instances", byID: true, drop: mark("instances"),
			seed: func(t *testing.T, tn apptest.Tenant, i int) string {
				row, err := store.InsertInstance(ctx, q, store.Instance{ID: idgen.New(idgen.Instance), TenantID: tn.ID, PoolID: tn.PoolID,
					AccountID: tn.AccountID, Name: fmt.Sprintf("seed-%d", i), Region: "nyc3", Flavor: "small"})
				must(t, err)
				return row.ID
			}},
		"networks": {rpc: "ListNetworks", route: "networks/list", items: "networks", byID: true, drop: del("networks"),
			seed: func(t *testing.T, tn apptest.Tenant, i int) string {
				row, err := store.InsertNetwork(ctx, q, store.Network{ID: idgen.New(idgen.Network), TenantID: tn.ID, AccountID: tn.AccountID,
					Name: fmt.Sprintf("seed-%d", i)})
				must(t, err)
				return row.ID
			}},
		"subnets": {rpc: "ListSubnets", route: "subnets/list", items: "subnets", byID: true, drop: mark("subnets"),
			seed: func(t *testing.T, tn apptest.Tenant, i int) string {
				n, err := store.InsertNetwork(ctx, q, store.Network{ID: idgen.New(idgen.Network), TenantID: tn.ID, AccountID: tn.AccountID,
					Name: fmt.Sprintf("net-%d", i)})
				must(t, err)
				row, err := store.InsertSubnet(ctx, q, store.Subnet{ID: idgen.New(idgen.Subnet), TenantID: tn.ID, NetworkID: n.ID,
					AccountID: tn.AccountID, Name: fmt.Sprintf("seed-%d", i), Region: "nyc3", IPRange: fmt.Sprintf("10.%d.0.0/24", i)})
				must(t, err)
				return row.ID
			}},
		"certificates": {rpc: "ListCertificates", route: "certificates/list", items: "certificates", byID: true, drop: mark("certificates"),
			seed: func(t *testing.T, tn apptest.Tenant, i int) string {
				row, err := store.InsertCertificate(ctx, q, store.Certificate{ID: idgen.New(idgen.Certificate), TenantID: tn.ID,
					AccountID: tn.AccountID, Name: fmt.Sprintf("seed-%d", i), Kind: "managed", DNSNames: []string{fmt.Sprintf("s%d.example.com", i)}})
				must(t, err)
				return row.ID
			}},
		"providerAccounts": {rpc: "ListProviderAccounts", route: "providerAccounts/list", items: "accounts", byID: true, drop: del("provider_accounts"),
			seed: func(t *testing.T, tn apptest.Tenant, i int) string {
				row, err := store.InsertAccount(ctx, q, store.Account{ID: idgen.New(idgen.Account), TenantID: tn.ID, Kind: "digitalocean",
					Name: fmt.Sprintf("seed-%d", i), TokenSealed: []byte("sealed")})
				must(t, err)
				return row.ID
			}},
		"pools": {rpc: "ListPools", route: "pools/list", items: "pools", byID: true, drop: del("pools"),
			seed: func(t *testing.T, tn apptest.Tenant, i int) string { return pool(t, tn, i).ID }},
		"quotas": {rpc: "ListQuotas", route: "quotas/list", items: "quotas",
			idOf: func(it map[string]any) string { return it["poolId"].(string) + "/" + it["resource"].(string) },
			seed: func(t *testing.T, tn apptest.Tenant, i int) string {
				row, err := store.SetQuota(ctx, q, store.Quota{PoolID: tn.PoolID, TenantID: tn.ID, Resource: fmt.Sprintf("seed%03d", i), Limit: 1})
				must(t, err)
				return row.PoolID + "/" + row.Resource
			},
			drop: func(t *testing.T, id string) {
				pool, res, _ := strings.Cut(id, "/")
				exec(t, s, "DELETE FROM quotas WHERE pool_id = $1 AND resource = $2", pool, res)
			}},
		"substrates": {rpc: "ListSubstrates", route: "substrates/list", items: "substrates", drop: mark("substrates"),
			seed: func(t *testing.T, tn apptest.Tenant, i int) string {
				p := pool(t, tn, i)
				row, err := store.InsertSubstrate(ctx, q, store.Substrate{ID: idgen.New(idgen.Substrate), TenantID: tn.ID, PoolID: p.ID,
					JoinTokenHash: []byte(p.ID), JoinTokenSealed: []byte("sealed")})
				must(t, err)
				return row.ID
			}},
		"metal": {rpc: "ListNodes", route: "metal/list", items: "nodes", drop: del("metal_nodes"),
			seed: func(t *testing.T, tn apptest.Tenant, i int) string {
				row, err := store.InsertMetalNode(ctx, q, store.MetalNode{ID: idgen.New(idgen.MetalNode), TenantID: tn.ID,
					Name: fmt.Sprintf("seed-%d", i), State: "enrolled", BMCAddress: fmt.Sprintf("192.0.2.%d", i+1), BMCPort: 443,
					BMCProtocol: "redfish", BMCUsername: "admin", BMCPasswordSealed: []byte("sealed")})
				must(t, err)
				return row.ID
			}},
		"tenants": {rpc: "ListTenants", route: "tenants/list", items: "tenants", admin: true, drop: del("tenants"),
			seed: func(t *testing.T, tn apptest.Tenant, i int) string {
				row, err := store.InsertTenant(ctx, q, store.Tenant{ID: fmt.Sprintf("%s-seed-%d", tn.ID, i), DisplayName: "seed"})
				must(t, err)
				return row.ID
			}},
		"principals": {rpc: "ListPrincipals", route: "principals/list", items: "principals", byID: true, drop: del("principals"),
			seed: func(t *testing.T, tn apptest.Tenant, i int) string {
				row, err := store.InsertPrincipal(ctx, q, store.Principal{ID: idgen.New(idgen.Principal), TenantID: tn.ID, Kind: "user",
					DisplayName: fmt.Sprintf("seed-%d", i)})
				must(t, err)
				return row.ID
			}},
		"projects": {rpc: "ListProjects", route: "projects/list", items: "projects", byID: true, drop: del("projects"),
			seed: func(t *testing.T, tn apptest.Tenant, i int) string {
				row, err := store.InsertProject(ctx, q, store.Project{ID: idgen.New(idgen.Project), TenantID: tn.ID, Name: fmt.Sprintf("seed-%d", i)})
				must(t, err)
				return row.ID
			}},
		"usage": {rpc: "ListUsage", route: "usage/list", items: "records", drop: func(t *testing.T, id string) {
			exec(t, s, "DELETE FROM usage_records WHERE resource_id = $1", id)
		},
			idOf: func(it map[string]any) string { return it["resourceId"].(string) },
			seed: func(t *testing.T, tn apptest.Tenant, i int) string {
				res := idgen.New(idgen.LoadBalancer)
				must(t, store.StartUsage(ctx, q, store.UsageRecord{ID: idgen.New(idgen.UsageRecord), TenantID: tn.ID,
					Meter: "vps.load-balancer.hours", ResourceID: res}))
				return res
			}},
	}
}

// TestEveryListPages drives every list method (but events/list, which has its own cursor) through
// the JSON mapping on real PostgreSQL and OpenFGA: the default answer is the whole list in its
// order with no token; pages of 2 concatenate to it; pages taken while items are created and
// deleted between them list every item that exists throughout exactly once and none twice; a
// token is refused by another tenant and by another list; pageSize out of 1-1000 is refused.
func TestEveryListPages(t *testing.T) {
	s := apptest.Start(t)
	cases := listCases(s)
	// Every List RPC of the schema pages and has its case here (events/list keeps its cursor).
	covered := map[string]bool{}
	for _, c := range cases {
		covered[c.rpc] = true
	}
	protoregistry.GlobalFiles.RangeFilesByPackage("bettercompute.compute.v1", func(f protoreflect.FileDescriptor) bool {
		for i := range f.Services().Len() {
			ms := f.Services().Get(i).Methods()
			for j := range ms.Len() {
				m := ms.Get(j)
				name := string(m.Name())
				if !strings.HasPrefix(name, "List") || name == "ListEvents" {
					continue
				}
				in, out := m.Input().Fields(), m.Output().Fields()
				if in.ByName("page_size") == nil || in.ByName("page_token") == nil || out.ByName("next_page_token") == nil {
					t.Errorf("%s does not page", name)
				}
				if !covered[name] {
					t.Errorf("%s has no case in listCases", name)
				}
				delete(covered, name)
			}
		}
		return true
	})
	if len(covered) != 0 {
		t.Errorf("cases of no RPC: %v", covered)
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			a := s.NewTenant(t, "pages-"+strings.ToLower(name)+"-a", "admin")
			b := s.NewTenant(t, "pages-"+strings.ToLower(name)+"-b", "admin")
			token := a.Token
			if c.admin {
				token = s.AdminToken
			}
			idOf := c.idOf
			if idOf == nil {
				idOf = func(it map[string]any) string { return it["id"].(string) }
			}
			call := func(tn apptest.Tenant, tok string, extra map[string]any) (int, map[string]any) {
				body := map[string]any{}
				if !c.admin {
					body["tenantId"] = tn.ID
				}
				for k, v := range extra {
					body[k] = v
				}
				return s.PostJSON(t, "/api/compute/"+c.route, tok, body)
			}
			page := func(extra map[string]any) ([]string, string) {
				t.Helper()
				status, got := call(a, token, extra)
				if status != http.StatusOK {
					t.Fatalf("%v: %d %v", extra, status, got)
				}
				items, _ := got[c.items].([]any)
				out := make([]string, len(items))
				for i, it := range items {
					out[i] = idOf(it.(map[string]any))
				}
				next, _ := got["nextPageToken"].(string)
				return out, next
			}
			var seeded []string
			mine := map[string]bool{} // what the test made, and so may remove
			for i := range 5 {
				seeded = append(seeded, c.seed(t, a, i))
				mine[seeded[i]] = true
			}
			c.seed(t, b, 0)

			// The default answer: every item, in the list's order, no token.
			full, next := page(nil)
			if next != "" {
				t.Fatalf("default answer of %d items has a token", len(full))
			}
			at := 0
			for _, id := range full {
				if at < len(seeded) && id == seeded[at] {
					at++
				}
			}
			if at != len(seeded) {
				t.Fatalf("default answer %v does not hold the seeded %v in creation order", full, seeded)
			}
			if c.byID && !sort.StringsAreSorted(full) {
				t.Fatalf("default answer not in id order: %v", full)
			}

			// Pages of 2, nothing changing: the default answer again.
			var concat []string
			tok := ""
			for {
				extra := map[string]any{"pageSize": 2}
				if tok != "" {
					extra["pageToken"] = tok
				}
				items, next := page(extra)
				if len(items) > 2 || (next != "" && len(items) != 2) {
					t.Fatalf("a page of %d items, next %q", len(items), next)
				}
				concat = append(concat, items...)
				if tok = next; tok == "" {
					break
				}
			}
			if fmt.Sprint(concat) != fmt.Sprint(full) {
				t.Fatalf("pages %v, default answer %v", concat, full)
			}

			// Pages of 2 while, between pages, one item is created, one already listed and one not
			// yet listed are removed.
			seen := map[string]int{}
			dropped := map[string]bool{}
			unseen := slices.Clone(full)
			tok, pages := "", 0
			first := ""
			for {
				extra := map[string]any{"pageSize": 2}
				if tok != "" {
					extra["pageToken"] = tok
				}
				items, next := page(extra)
				if pages == 0 {
					first = next
				}
				pages++
				for _, id := range items {
					seen[id]++
					unseen = slices.DeleteFunc(unseen, func(u string) bool { return u == id })
				}
				if tok = next; tok == "" {
					break
				}
				mine[c.seed(t, a, 100+pages)] = true
				if len(items) > 0 && mine[items[0]] && !dropped[items[0]] {
					c.drop(t, items[0])
					dropped[items[0]] = true
				}
				for i := len(unseen) - 1; i > 0; i-- {
					if id := unseen[i]; mine[id] {
						c.drop(t, id)
						dropped[id] = true
						unseen = slices.Delete(unseen, i, i+1)
						break
					}
				}
			}
			for id, n := range seen {
				if n != 1 {
					t.Errorf("%s listed %d times", id, n)
				}
			}
			for _, id := range full {
				if !dropped[id] && seen[id] != 1 {
					t.Errorf("%s existed throughout and was listed %d times", id, seen[id])
				}
			}
			if pages < 3 || first == "" {
				t.Fatalf("%d pages", pages)
			}

			// A token is bound to its tenant and its list; pageSize to 1-1000.
			refused := func(what string, status int, e map[string]any, field string) {
				t.Helper()
				if status != http.StatusBadRequest || e["code"] != "INVALID_INPUT" || e["field"] != field {
					t.Errorf("%s: %d %v", what, status, e)
				}
			}
			if !c.admin {
				status, e := call(b, b.Token, map[string]any{"pageToken": first})
				refused("another tenant's token", status, e, "pageToken")
			}
			other := "/api/compute/projects/list"
			if name == "projects" {
				other = "/api/compute/networks/list"
			}
			status, e := s.PostJSON(t, other, a.Token, map[string]any{"tenantId": a.ID, "pageToken": first})
			refused("another list's token", status, e, "pageToken")
			for _, size := range []int{1001, -1} {
				status, e := call(a, token, map[string]any{"pageSize": size})
				refused(fmt.Sprintf("pageSize %d", size), status, e, "pageSize")
			}
		})
	}
}
