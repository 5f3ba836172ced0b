package lifecycle_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"better-compute.dev/compute/lifecycle"
	"better-compute.dev/compute/store"
	"better-compute.dev/compute/store/storetest"
)

// seedRule is one rule of a kind's table and the statement it comes from: a sentence of the
// product specification the API was written from (the seed, quoted; docs/api.md states the same
// rules for readers of this repository, and test/apidoc keeps its event, quota and meter names
// true), or, where the seed is silent, who states it.
type seedRule struct {
	kind *lifecycle.Kind
	t    lifecycle.Transition
	seed string // quoted from the seed verbatim ("" when the seed says nothing)
	from string // who states the rule when the seed does not
	want lifecycle.Rule
}

const (
	seedLBPage   = "A load balancer books one loadBalancers quota on the pool (no quota row grants none) and bills vps.load-balancer.hours from ready until deleted."
	seedLBCreate = "It returns pending, booking one loadBalancers; no room, or no quota row, is QUOTA_EXCEEDED."
	seedLBEvents = "Publishes providerLoadBalancer.created, then providerLoadBalancer.ready with its address, or providerLoadBalancer.error."
	seedLBUpdate = "returns it updating until the provider has applied it; publishes providerLoadBalancer.updated with what changed."
	seedLBDelete = "Marks the load balancer for deletion and returns it deleting; the reconciler deletes it at the provider, refunds its quota and publishes providerLoadBalancer.deleted."
	seedSubstr   = "There is nothing to call to create or delete a substrate: change the pool's policy, or archive the pool to tear it down."
	seedMetal    = "Each verb checks the move against the provision state table, records it in one transaction and queues the metal reconciler"
)

var seedRules = []seedRule{
	{lifecycle.LoadBalancer, lifecycle.Create, seedLBPage + " " + seedLBCreate + " " + seedLBEvents, "",
		lifecycle.Rule{Books: "loadBalancers", Event: "providerLoadBalancer.created"}},
	{lifecycle.LoadBalancer, lifecycle.Ready, seedLBPage + " " + seedLBEvents, "",
		lifecycle.Rule{Starts: "vps.load-balancer.hours", Event: "providerLoadBalancer.ready", Data: []string{"address"}}},
	{lifecycle.LoadBalancer, lifecycle.Error, seedLBEvents, "core's doc of the event: data.error says why",
		lifecycle.Rule{Event: "providerLoadBalancer.error", Data: []string{"error"}}},
	{lifecycle.LoadBalancer, lifecycle.Update, seedLBUpdate, "",
		lifecycle.Rule{Event: "providerLoadBalancer.updated", Data: []string{"changed"}}},
	// The delete request publishes nothing: the event is the reconciler's, once it is gone.
	{lifecycle.LoadBalancer, lifecycle.Delete, seedLBDelete, "", lifecycle.Rule{}},
	{lifecycle.LoadBalancer, lifecycle.Deleted, seedLBPage + " " + seedLBDelete, "",
		lifecycle.Rule{Refunds: "loadBalancers", Stops: "vps.load-balancer.hours", Event: "providerLoadBalancer.deleted"}},
	// The seed is silent on changes made at the provider behind the API's back.
	{lifecycle.LoadBalancer, lifecycle.Drifted, "", "docs/drift.md: the repair publishes the parts that differed",
		lifecycle.Rule{Event: "providerLoadBalancer.drifted", Data: []string{"parts"}}},

	{lifecycle.Instance, lifecycle.Create, "", "the pool's instances quota row (apptest, bc-server dev)", lifecycle.Rule{Books: "instances"}},
	{lifecycle.Instance, lifecycle.Delete, "", "an instance's delete marks it deleting", lifecycle.Rule{}},
	{lifecycle.Instance, lifecycle.Deleted, "", "the quota comes back once the machine is gone", lifecycle.Rule{Refunds: "instances"}},

	// Substrates book no quota and are not metered: nothing creates one but a pool's policy.
	{lifecycle.Substrate, lifecycle.Create, seedSubstr, "docs/substrates.md",
		lifecycle.Rule{Event: "poolSubstrate.created", Data: []string{"poolId"}}},
	{lifecycle.Substrate, lifecycle.Ready, seedSubstr, "docs/substrates.md",
		lifecycle.Rule{Event: "poolSubstrate.ready", Data: []string{"poolId", "clusterId"}}},
	{lifecycle.Substrate, lifecycle.Update, seedSubstr, "docs/substrates.md",
		lifecycle.Rule{Event: "poolSubstrate.updated", Data: []string{"poolId", "clusterId"}}},
	{lifecycle.Substrate, lifecycle.Error, seedSubstr, "docs/substrates.md",
		lifecycle.Rule{Event: "poolSubstrate.error", Data: []string{"poolId", "error"}}},
	{lifecycle.Substrate, lifecycle.Deleted, seedSubstr, "docs/substrates.md",
		lifecycle.Rule{Event: "poolSubstrate.deleted", Data: []string{"poolId"}}},

	// A substrate's node pools: evented only (docs/substrates.md).
	{lifecycle.SubstrateNodePool, lifecycle.Create, seedSubstr, "docs/substrates.md",
		lifecycle.Rule{Event: "poolSubstrate.nodePool.created", Data: []string{"poolId", "clusterId", "nodePool"}}},
	{lifecycle.SubstrateNodePool, lifecycle.Ready, seedSubstr, "docs/substrates.md",
		lifecycle.Rule{Event: "poolSubstrate.nodePool.ready", Data: []string{"poolId", "clusterId", "nodePool"}}},
	{lifecycle.SubstrateNodePool, lifecycle.Update, seedSubstr, "docs/substrates.md",
		lifecycle.Rule{Event: "poolSubstrate.nodePool.updated", Data: []string{"poolId", "clusterId", "nodePool"}}},
	{lifecycle.SubstrateNodePool, lifecycle.Error, seedSubstr, "docs/substrates.md",
		lifecycle.Rule{Event: "poolSubstrate.nodePool.error", Data: []string{"poolId", "clusterId", "nodePool"}}},
	{lifecycle.SubstrateNodePool, lifecycle.Deleted, seedSubstr, "docs/substrates.md",
		lifecycle.Rule{Event: "poolSubstrate.nodePool.deleted", Data: []string{"poolId", "clusterId", "nodePool"}}},

	// Metal nodes book no quota and are not metered; every move is one transaction with its event.
	{lifecycle.MetalNode, lifecycle.Enroll, seedMetal, "docs/metal.md", lifecycle.Rule{Event: "metalNode.enrolled"}},
	{lifecycle.MetalNode, lifecycle.Move, seedMetal, "docs/metal.md",
		lifecycle.Rule{Event: "metalNode.moved", Data: []string{"from", "to"}}},
	{lifecycle.MetalNode, lifecycle.Credentials, seedMetal, "docs/metal.md", lifecycle.Rule{Event: "metalNode.credentialsUpdated"}},
}

// TestRulesAreTheSeeds checks every row of every kind's table against the statement it comes
// from, and that no table has a row this test does not check.
func TestRulesAreTheSeeds(t *testing.T) {
	checked := map[*lifecycle.Kind]map[lifecycle.Transition]bool{}
	for _, c := range seedRules {
		t.Run(c.kind.Name+"/"+string(c.t), func(t *testing.T) {
			if c.seed == "" && c.from == "" {
				t.Fatal("a rule must name where it comes from")
			}
			got, ok := c.kind.Rule(c.t)
			if !ok {
				t.Fatalf("%s has no rule for %s", c.kind.Name, c.t)
			}
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("%s on %s (-seed +table):\n%s", c.kind.Name, c.t, diff)
			}
			for _, name := range []string{got.Books, got.Refunds, got.Starts, got.Stops, got.Event} {
				if name != "" && c.seed != "" && c.from == "" && !strings.Contains(c.seed, name) {
					t.Errorf("the rule names %s, which its seed statement does not", name)
				}
			}
		})
		if checked[c.kind] == nil {
			checked[c.kind] = map[lifecycle.Transition]bool{}
		}
		checked[c.kind][c.t] = true
	}
	for _, k := range lifecycle.Kinds {
		for tr := range k.Rules {
			if !checked[k][tr] {
				t.Errorf("%s's rule for %s is checked against nothing", k.Name, tr)
			}
		}
	}
}

// TestEveryKindGivesBackWhatItTakes: what a create books, deleted refunds; what ready starts,
// deleted stops ("from ready until deleted"); and no two transitions of a kind publish one type.
func TestEveryKindGivesBackWhatItTakes(t *testing.T) {
	for _, k := range lifecycle.Kinds {
		created, _ := k.Rule(lifecycle.Create)
		ready, _ := k.Rule(lifecycle.Ready)
		deleted, _ := k.Rule(lifecycle.Deleted)
		if created.Books != deleted.Refunds {
			t.Errorf("%s: create books %q, deleted refunds %q", k.Name, created.Books, deleted.Refunds)
		}
		if ready.Starts != deleted.Stops {
			t.Errorf("%s: ready starts %q, deleted stops %q", k.Name, ready.Starts, deleted.Stops)
		}
		seen := map[string]lifecycle.Transition{}
		for tr, r := range k.Rules {
			if r.Event == "" {
				continue
			}
			if other, dup := seen[r.Event]; dup {
				t.Errorf("%s: %s and %s both publish %s", k.Name, tr, other, r.Event)
			}
			seen[r.Event] = tr
			if back, ok := k.TransitionOf(r.Event); !ok || back != tr {
				t.Errorf("%s: TransitionOf(%s) = %s, %v; want %s", k.Name, r.Event, back, ok, tr)
			}
			if !strings.HasPrefix(r.Event, eventPrefix(k)+".") {
				t.Errorf("%s: event %s is not of its kind", k.Name, r.Event)
			}
		}
	}
}

func eventPrefix(k *lifecycle.Kind) string {
	if k == lifecycle.LoadBalancer {
		return "providerLoadBalancer"
	}
	return k.Name
}

// TestApplyWritesTheRule runs each effect of the load balancer's and the instance's rules on
// PostgreSQL: the booking (refused without a row or room, before anything is written), the
// meter opened once and closed, the refund, the event with its data; a transition a kind does
// not have, or an event without the data its rule names, writes nothing.
func TestApplyWritesTheRule(t *testing.T) {
	db := storetest.New(t)
	ctx := context.Background()
	q := db.Q()
	if _, err := store.InsertTenant(ctx, q, store.Tenant{ID: "life", DisplayName: "life"}); err != nil {
		t.Fatal(err)
	}
	if _, err := store.InsertAccount(ctx, q, store.Account{ID: "pacct_life", TenantID: "life", Kind: "digitalocean", Name: "a",
		TokenSealed: []byte("x"), APIURL: "http://127.0.0.1:1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := store.InsertPool(ctx, q, store.Pool{ID: "pool_life", TenantID: "life", AccountID: "pacct_life", Name: "p",
		Regions: []string{"nyc3"}, Policy: []byte(`{}`), State: "active"}); err != nil {
		t.Fatal(err)
	}
	lb := lifecycle.Subject{TenantID: "life", PoolID: "pool_life", ID: "plb_life"}
	in := lifecycle.Subject{TenantID: "life", PoolID: "pool_life", ID: "inst_life"}

	if err := lifecycle.Instance.Apply(ctx, q, lifecycle.Create, in, nil); !errors.Is(err, lifecycle.ErrNoQuota) {
		t.Fatalf("a create without a quota row: %v, want ErrNoQuota", err)
	}
	if _, err := store.SetQuota(ctx, q, store.Quota{PoolID: "pool_life", TenantID: "life", Resource: "instances", Limit: 1}); err != nil {
		t.Fatal(err)
	}
	if err := lifecycle.Instance.Apply(ctx, q, lifecycle.Create, in, nil); err != nil {
		t.Fatal(err)
	}
	if err := lifecycle.Instance.Apply(ctx, q, lifecycle.Create, in, nil); !errors.Is(err, lifecycle.ErrNoQuota) {
		t.Fatalf("a create without room: %v, want ErrNoQuota", err)
	}
	if got := used(t, db, "instances"); got != 1 {
		t.Errorf("instances used after one create: %d", got)
	}
	if err := lifecycle.Instance.Apply(ctx, q, lifecycle.Deleted, in, nil); err != nil {
		t.Fatal(err)
	}
	if got := used(t, db, "instances"); got != 0 {
		t.Errorf("instances used after deleted: %d", got)
	}

	if err := lifecycle.LoadBalancer.Apply(ctx, q, lifecycle.Enroll, lb, nil); err == nil {
		t.Error("a load balancer was enrolled")
	}
	if err := lifecycle.LoadBalancer.Apply(ctx, q, lifecycle.Ready, lb, map[string]any{"addressV6": ""}); err == nil {
		t.Error("ready without an address was published")
	}
	if _, err := store.SetQuota(ctx, q, store.Quota{PoolID: "pool_life", TenantID: "life", Resource: "loadBalancers", Limit: 1}); err != nil {
		t.Fatal(err)
	}
	var res store.QuotaBooking
	if err := store.ExecuteLockedTwoTrips(ctx, db, func(rd *store.Reads) { lifecycle.LoadBalancer.Book(rd, lb, &res) },
		func() (*store.Writes, error) {
			var w store.Writes
			lifecycle.LoadBalancer.Take(&w, &res)
			return &w, nil
		}); err != nil {
		t.Fatal(err)
	}
	if !res.Booked || used(t, db, "loadBalancers") != 1 {
		t.Errorf("the create's booking took nothing: %+v", res)
	}
	for _, step := range []struct {
		t    lifecycle.Transition
		data map[string]any
	}{{lifecycle.Ready, map[string]any{"address": "192.0.2.1"}}, {lifecycle.Ready, map[string]any{"address": "192.0.2.1"}}} {
		if err := lifecycle.LoadBalancer.Apply(ctx, q, step.t, lb, step.data); err != nil {
			t.Fatal(err)
		}
	}
	var w store.Writes
	if err := lifecycle.LoadBalancer.Queue(&w, lifecycle.Deleted, lb, nil); err == nil {
		t.Error("deleted (a refund and a meter) was queued as last writes")
	}
	if err := lifecycle.LoadBalancer.Queue(&w, lifecycle.Update, lb, map[string]any{"changed": []any{"targets"}}); err != nil {
		t.Fatal(err)
	}
	tx, err := db.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Send(ctx, tx); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	u := usage(t, db, lb.ID)
	if len(u) != 1 || u[0].Meter != "vps.load-balancer.hours" || u[0].EndedAt != nil {
		t.Errorf("ready twice opens one interval of vps.load-balancer.hours: %+v", u)
	}
	if err := lifecycle.LoadBalancer.Apply(ctx, q, lifecycle.Deleted, lb, map[string]any{"name": "web"}); err != nil {
		t.Fatal(err)
	}
	if u := usage(t, db, lb.ID); len(u) != 1 || u[0].EndedAt == nil {
		t.Errorf("deleted closes the interval: %+v", u)
	}
	if got := used(t, db, "loadBalancers"); got != 0 {
		t.Errorf("loadBalancers used after deleted: %d", got)
	}
	evs, err := store.ListEvents(ctx, q, "life", 0, 100, lb.ID)
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, e := range evs {
		types = append(types, e.Type)
	}
	want := []string{"providerLoadBalancer.ready", "providerLoadBalancer.ready", "providerLoadBalancer.updated", "providerLoadBalancer.deleted"}
	if !slices.Equal(types, want) {
		t.Errorf("events %v, want %v", types, want)
	}
}

func used(t *testing.T, db *store.DB, resource string) int64 {
	t.Helper()
	var n int64
	if err := db.Pool().QueryRow(context.Background(), `SELECT used FROM quotas WHERE pool_id = 'pool_life' AND resource = $1`, resource).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func usage(t *testing.T, db *store.DB, resourceID string) []store.UsageRecord {
	t.Helper()
	all, err := store.ListUsage(context.Background(), db.Q(), "life", "", time.Unix(0, 0), time.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	return slices.DeleteFunc(all, func(u store.UsageRecord) bool { return u.ResourceID != resourceID })
}

// TestNoRuleOutsideTheTable: outside store (which runs the statements) and this package, no
// production code books or refunds quota, opens or closes a meter, or appends an event: every
// one of those is a lifecycle transition, so a new one gets its row in a table.
func TestNoRuleOutsideTheTable(t *testing.T) {
	direct := regexp.MustCompile(`\.(AppendEvent|StartUsage|StopUsage|RefundQuota|BookQuota)\(`)
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	skip := map[string]bool{"gen": true, "store": true, "lifecycle": true, "sdk": true, "web": true, "node_modules": true}
	files := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if skip[rel] || strings.HasPrefix(d.Name(), ".") && rel != "." {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files++
		for i, line := range strings.Split(string(raw), "\n") {
			if code, _, _ := strings.Cut(line, "//"); direct.MatchString(code) {
				t.Errorf("%s:%d writes a lifecycle effect directly (call lifecycle): %s", rel, i+1, strings.TrimSpace(line))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 50 {
		t.Fatalf("looked at %d Go files only", files)
	}
}
