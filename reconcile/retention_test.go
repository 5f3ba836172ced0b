package reconcile_test

import (
	"context"
	"testing"
	"time"

	"better-compute.dev/compute/reconcile"
	"better-compute.dev/compute/store"
	"better-compute.dev/compute/store/storetest"
)

// TestPruneGivesItsSlotBackOnABacklog: a pass facing more old rows than its batch bound deletes
// that many, asks to come back soon instead of a whole interval later, and the next pass finishes
// the backlog and asks for nothing; rows still young are never taken.
func TestPruneGivesItsSlotBackOnABacklog(t *testing.T) {
	t.Parallel()
	db := storetest.New(t)
	ctx := context.Background()
	const young = 10
	backlog := 50*reconcile.PruneBatch + 123 // more than one pass's batches
	if _, err := db.Q().Exec(ctx, `INSERT INTO work_items (kind, resource_id, updated_at)
		SELECT 'k', 'old-' || g, now() - interval '2 hours' FROM generate_series(1, $1::int) g
		UNION ALL SELECT 'k', 'young-' || g, now() FROM generate_series(1, $2::int) g`, backlog, young); err != nil {
		t.Fatal(err)
	}
	left := func() int {
		var n int
		if err := db.Q().QueryRow(ctx, `SELECT count(*) FROM work_items`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	pass := reconcile.Prune(db, store.RetainedWork, time.Hour)
	cases := []struct {
		reason    string
		again     bool
		wantAfter int
	}{
		{"first pass: its batch bound, then back soon", true, backlog - 50*reconcile.PruneBatch + young},
		{"second pass: the rest of the backlog, then the interval", false, young},
		{"third pass: nothing old, nothing deleted", false, young},
	}
	for _, c := range cases {
		res, err := pass.Reconcile(ctx, store.Lease{})
		if err != nil {
			t.Fatalf("%s: %v", c.reason, err)
		}
		if (res.RequeueAfter > 0) != c.again || (c.again && res.RequeueAfter > time.Minute) {
			t.Errorf("%s: requeue after %v", c.reason, res.RequeueAfter)
		}
		if got := left(); got != c.wantAfter {
			t.Errorf("%s: %d rows left, want %d", c.reason, got, c.wantAfter)
		}
	}
}
