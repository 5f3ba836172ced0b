package substrates_test

import (
	"slices"
	"testing"

	"better-compute.dev/compute/contract"
	"better-compute.dev/compute/store"
)

// The work-queue invariant's queries of clusters and node pools: a substrate being provisioned,
// or ready with a node pool not ready yet, is reported while its pool's item is idle, and not
// once it rests (ready with every node pool ready).
func TestUnqueuedClustersAndNodePools(t *testing.T) {
	e := newEnv(t, "unq")
	e.setPolicy(t, createPolicy(e.tn.AccountID))
	e.settle(t)
	sub := e.substrate(t)
	if sub.State != "ready" {
		t.Fatalf("settled substrate %s, want ready", sub.State)
	}
	db := e.s.App.DB
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := db.Pool().Exec(e.ctx, sql, args...); err != nil {
			t.Fatal(err)
		}
	}
	found := func(k store.UnqueuedKind) []string {
		t.Helper()
		got, err := store.FindUnqueued(e.ctx, db.Q(), contract.WorkKinds, k, 100)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, u := range got {
			if u.WorkID != e.tn.PoolID || u.WorkKind != contract.SubstrateKind {
				t.Errorf("%s %s would be queued as %s/%s, want %s/%s", k, u.ResourceID, u.WorkKind, u.WorkID, contract.SubstrateKind, e.tn.PoolID)
			}
			ids = append(ids, u.ResourceID)
		}
		return ids
	}
	// A ready substrate keeps its resync item: idle it by hand, as a lost item would be.
	exec(`UPDATE work_items SET due_at = NULL WHERE kind = $1 AND resource_id = $2`, contract.SubstrateKind, e.tn.PoolID)
	cases := []struct {
		name        string
		state       string
		poolsReady  bool
		cluster, np bool
	}{
		{"ready, every node pool ready", "ready", true, false, false},
		{"ready, a node pool not ready", "ready", false, false, true},
		{"provisioning", "provisioning", true, true, false},
		{"error", "error", false, false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			exec(`UPDATE substrates SET state = $2, node_pools = (SELECT coalesce(jsonb_agg(jsonb_set(np, '{ready}', to_jsonb($3::bool))), '[]'::jsonb)
				FROM jsonb_array_elements(node_pools) AS np) WHERE id = $1`, sub.ID, c.state, c.poolsReady)
			if got := found(store.UnqueuedCluster); (len(got) == 1) != c.cluster || (c.cluster && !slices.Equal(got, []string{sub.ID})) {
				t.Errorf("clusters reported %v, want reported: %v", got, c.cluster)
			}
			if got := found(store.UnqueuedNodePool); (len(got) == 1) != c.np {
				t.Errorf("node pools reported %v, want reported: %v", got, c.np)
			}
		})
	}
	// Leave it at rest, as the cleanup's assertion expects.
	exec(`UPDATE substrates SET state = 'error' WHERE id = $1`, sub.ID)
}
