package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"better-compute.dev/compute/requestid"
	"better-compute.dev/compute/store"
	"better-compute.dev/compute/store/storetest"
)

// TestFusedWritesDecide: which writes of a two-trip transaction share one statement. Inserts of
// distinct tables made of parameters do; a second write of a table, a write that reads a table,
// a second row read, and a client-judged write each end the run.
func TestFusedWritesDecide(t *testing.T) {
	t.Parallel()
	var row int
	cases := []struct {
		name   string
		writes func(w *store.Writes)
		want   int
	}{
		{name: "one write stays as it is", writes: func(w *store.Writes) { w.Exec("a", `INSERT INTO a VALUES ($1)`, 1) }, want: 1},
		{name: "distinct tables fuse", writes: func(w *store.Writes) {
			w.ExecRow("a", &row, `INSERT INTO a VALUES ($1) RETURNING id`, 1)
			w.Exec("b", `INSERT INTO b VALUES ($1, $2)`, 1, 2)
			w.Exec("c", `INSERT INTO c (x) SELECT unnest($1::int[])`, []int{1})
		}, want: 1},
		{name: "the same table twice splits", writes: func(w *store.Writes) {
			w.Exec("a", `INSERT INTO a VALUES ($1)`, 1)
			w.Exec("a again", `INSERT INTO a VALUES ($1)`, 2)
		}, want: 2},
		{name: "a write that reads a table is alone", writes: func(w *store.Writes) {
			w.Exec("a", `INSERT INTO a VALUES ($1)`, 1)
			w.Exec("b", `INSERT INTO b SELECT id FROM a`)
			w.Exec("c", `INSERT INTO c VALUES ($1)`, 1)
		}, want: 3},
		{name: "updates and deletes are alone", writes: func(w *store.Writes) {
			w.Exec("a", `DELETE FROM a WHERE id = $1`, 1)
			w.Exec("b", `UPDATE b SET x = 1`)
		}, want: 2},
		{name: "two rows read split", writes: func(w *store.Writes) {
			w.ExecRow("a", &row, `INSERT INTO a VALUES ($1) RETURNING id`, 1)
			w.ExecRow("b", &row, `INSERT INTO b VALUES ($1) RETURNING id`, 1)
		}, want: 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var w store.Writes
			tc.writes(&w)
			got := w.Statements(context.Background())
			if len(got) != tc.want {
				t.Fatalf("%d statements, want %d:\n%s", len(got), tc.want, strings.Join(got, "\n"))
			}
			// Decided again, from what the first decision kept: the same statements.
			var again store.Writes
			tc.writes(&again)
			if got2 := again.Statements(context.Background()); strings.Join(got2, "\n") != strings.Join(got, "\n") {
				t.Fatalf("decided again:\n%s\nfirst:\n%s", strings.Join(got2, "\n"), strings.Join(got, "\n"))
			}
		})
	}
}

// TestFusedWritesRun: a fused statement does what its writes did one by one — each row written
// once, the read row returned, a row and the rows referencing it accepted together, a
// duplicate refused with its own constraint and nothing written, and an event's request id
// taken from the call.
func TestFusedWritesRun(t *testing.T) {
	t.Parallel()
	db := storetest.New(t)
	ctx := requestid.WithID(context.Background(), "req_fused")
	if _, err := db.Pool().Exec(ctx, `CREATE TABLE parent (id int PRIMARY KEY, name text NOT NULL);
		CREATE TABLE child (parent_id int NOT NULL REFERENCES parent (id), n int NOT NULL);
		CREATE TABLE note (id int PRIMARY KEY, v int NOT NULL DEFAULT 0)`); err != nil {
		t.Fatal(err)
	}
	create := func(id int) (int, error) {
		var got int
		err := store.ExecuteTwoTrips(ctx, db, func(r *store.Reads) {}, func() (*store.Writes, error) {
			var w store.Writes
			w.ExecRow("parent", &got, `INSERT INTO parent (id, name) VALUES ($1, $2) RETURNING id * 10`, id, "p")
			w.Exec("children", `INSERT INTO child (parent_id, n) SELECT $1, unnest($2::int[])`, id, []int{1, 2, 3})
			w.Exec("note", `INSERT INTO note (id) VALUES ($1) ON CONFLICT (id) DO UPDATE SET v = note.v + 1`, id)
			if err := w.AppendEvent(store.Event{TenantID: "t1", ID: "evt_" + string(rune('a'+id)), Type: "x.created", ResourceID: "r"}); err != nil {
				return nil, err
			}
			if n := len(w.Statements(ctx)); n != 1 {
				t.Errorf("%d statements, want 1", n)
			}
			return &w, nil
		})
		return got, err
	}
	got, err := create(1)
	if err != nil || got != 10 {
		t.Fatalf("create: %d, %v", got, err)
	}
	var children, notes, events int
	var rid string
	if err := db.Pool().QueryRow(ctx, `SELECT (SELECT count(*) FROM child), (SELECT count(*) FROM note),
		(SELECT count(*) FROM event_inbox), (SELECT request_id FROM event_inbox LIMIT 1)`).Scan(&children, &notes, &events, &rid); err != nil {
		t.Fatal(err)
	}
	if children != 3 || notes != 1 || events != 1 || rid != "req_fused" {
		t.Fatalf("children %d notes %d events %d request %q", children, notes, events, rid)
	}
	_, err = create(1)
	if !errors.Is(err, store.ErrConflict) || store.ConstraintName(err) != "parent_pkey" {
		t.Fatalf("duplicate: %v (constraint %q), want ErrConflict on parent_pkey", err, store.ConstraintName(err))
	}
	if err := db.Pool().QueryRow(ctx, `SELECT (SELECT count(*) FROM child), (SELECT max(v) FROM note), (SELECT count(*) FROM event_inbox)`).Scan(&children, &notes, &events); err != nil {
		t.Fatal(err)
	}
	if children != 3 || notes != 0 || events != 1 {
		t.Fatalf("after the refused duplicate: children %d note.v %d events %d", children, notes, events)
	}
}
