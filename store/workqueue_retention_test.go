package store_test

import (
	"context"
	"testing"
	"time"

	"better-compute.dev/compute/store"
	"better-compute.dev/compute/store/storetest"
)

// TestPruneBatchKeepsWhatItMust: with every row made now and the prune's clock two days ahead
// (a retention of one hour), each kind deletes its old rows in batches of at most the limit and
// keeps what its rule keeps: a tenant's newest numbered event, open usage intervals, work items
// that are due or held.
func TestPruneBatchKeepsWhatItMust(t *testing.T) {
	db := storetest.New(t)
	ctx := context.Background()
	q := db.Q()
	seed := []string{
		`INSERT INTO events (tenant_id, seq, id, type, resource_id) SELECT t, g, t || '-ev-' || g, 'x', 'r' FROM generate_series(1, 5) g, (VALUES ('a'), ('b')) AS v(t)`,
		`INSERT INTO event_inbox (tenant_id, id, type, resource_id) SELECT 'a', 'in-' || g, 'x', 'r' FROM generate_series(1, 3) g`,
		`INSERT INTO idempotency_keys (tenant_id, operation, idem_key, request_hash, resource_id, expires_at)
		   SELECT 'a', 'create', 'k' || g, '\x00', 'r', now() + interval '24 hours' FROM generate_series(1, 4) g`,
		`INSERT INTO usage_records (id, tenant_id, meter, resource_id, started_at, ended_at)
		   SELECT 'u' || g, 'a', 'm', 'r' || g, now(), CASE WHEN g <= 3 THEN now() END FROM generate_series(1, 5) g`,
		`INSERT INTO work_items (kind, resource_id, due_at, lease_holder)
		   SELECT 'k', 'w' || g, CASE WHEN g = 4 THEN now() END, CASE WHEN g = 5 THEN 'someone' END FROM generate_series(1, 5) g`,
	}
	for _, sql := range seed {
		if _, err := q.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	later := time.Now().Add(48 * time.Hour)
	count := func(sql string) int {
		var n int
		if err := q.QueryRow(ctx, sql).Scan(&n); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		return n
	}
	cases := []struct {
		reason string
		kind   store.Retained
		left   string // counts what must remain
		want   int
	}{
		{"events: all but each tenant's newest numbered one, and the whole inbox", store.RetainedEvents,
			`SELECT (SELECT count(*) FROM events WHERE seq = 5) * 10 + (SELECT count(*) FROM events) + (SELECT count(*) FROM event_inbox) * 100`, 22},
		{"idempotency records: all of them", store.RetainedIdempotency, `SELECT count(*) FROM idempotency_keys`, 0},
		{"usage: the closed intervals, never the open ones", store.RetainedUsage, `SELECT count(*) FROM usage_records WHERE ended_at IS NULL`, 2},
		{"usage: nothing closed is left", store.RetainedUsage, `SELECT count(*) FROM usage_records WHERE ended_at IS NOT NULL`, 0},
		{"work: the idle items, never one due or held", store.RetainedWork, `SELECT count(*) FROM work_items WHERE resource_id IN ('w4', 'w5')`, 2},
		{"work: nothing idle is left", store.RetainedWork, `SELECT count(*) FROM work_items`, 2},
	}
	for _, c := range cases {
		// A batch of two deletes at most two rows per statement and says a full batch went.
		batches := 0
		for {
			n, full, err := store.PruneBatch(ctx, q, store.PruneBatchParams{Kind: c.kind, Keep: time.Hour, Limit: 2, Now: later})
			if err != nil {
				t.Fatalf("%s: %v", c.reason, err)
			}
			if n > 4 {
				t.Fatalf("%s: one batch deleted %d rows over at most two statements of two", c.reason, n)
			}
			batches++
			if !full {
				break
			}
		}
		if got := count(c.left); got != c.want {
			t.Errorf("%s: %d, want %d", c.reason, got, c.want)
		}
	}
	// Rows younger than the retention stay: the same prunes on today's clock delete nothing.
	if _, err := q.Exec(ctx, `INSERT INTO idempotency_keys (tenant_id, operation, idem_key, request_hash, resource_id, expires_at)
		VALUES ('a', 'create', 'fresh', '\x00', 'r', now() + interval '24 hours')`); err != nil {
		t.Fatal(err)
	}
	for _, kind := range store.RetainedKinds {
		if n, _, err := store.PruneBatch(ctx, q, store.PruneBatchParams{Kind: kind, Keep: time.Hour, Limit: 100}); err != nil || n != 0 {
			t.Errorf("%s on a young table: %d deleted, %v", kind, n, err)
		}
	}
	if _, _, err := store.PruneBatch(ctx, q, store.PruneBatchParams{Kind: "quotas", Keep: time.Hour, Limit: 1}); err == nil {
		t.Error("an unknown kind was pruned")
	}
}
