package store_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"

	"better-compute.dev/compute/store"
	"better-compute.dev/compute/store/storetest"
)

const concurrentStarters = 4

// runConcurrently calls fn once per replica pool, all at once, and returns their errors.
func runConcurrently(t *testing.T, schema string, fn func(db *store.DB) error) []error {
	t.Helper()
	ctx := context.Background()
	dbs := make([]*store.DB, concurrentStarters)
	for i := range dbs {
		db, err := storetest.OpenSchema(ctx, schema)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(db.Close)
		dbs[i] = db
	}
	start := make(chan struct{})
	errs := make(chan error, len(dbs))
	for _, db := range dbs {
		go func() {
			<-start
			errs <- fn(db)
		}()
	}
	close(start)
	out := make([]error, 0, len(dbs))
	for range dbs {
		out = append(out, <-errs)
	}
	return out
}

// TestMigrateConcurrentStartersApplyOnce runs migrations that are not idempotent (plain
// INSERTs and an UPDATE) from several replicas at once: each must be applied exactly once and
// in order.
func TestMigrateConcurrentStartersApplyOnce(t *testing.T) {
	t.Parallel()
	s := storetest.NewSchema(t, storetest.Unmigrated())
	files := fstest.MapFS{
		"0002_more.sql":  {Data: []byte(`INSERT INTO probe VALUES (2);`)},
		"0001_probe.sql": {Data: []byte(`CREATE TABLE probe (n int NOT NULL); INSERT INTO probe VALUES (1);`)},
		"0003_bump.sql":  {Data: []byte(`UPDATE probe SET n = n + 10;`)},
		"README.md":      {Data: []byte(`not a migration`)},
	}
	ctx := context.Background()
	for i, err := range runConcurrently(t, s.Name, func(db *store.DB) error { return db.MigrateFS(ctx, files) }) {
		if err != nil {
			t.Errorf("starter %d: %v", i, err)
		}
	}
	rows, err := s.DB.Pool().Query(ctx, `SELECT n FROM probe ORDER BY n`)
	if err != nil {
		t.Fatal(err)
	}
	var got []int
	for rows.Next() {
		var n int
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		got = append(got, n)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]int{11, 12}, got); diff != "" {
		t.Errorf("probe rows (-want +got):\n%s", diff)
	}
	applied, err := s.DB.AppliedMigrations(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"0001_probe", "0002_more", "0003_bump"}, applied); diff != "" {
		t.Errorf("applied (-want +got):\n%s", diff)
	}
	// A second run finds nothing to do.
	if err := s.DB.MigrateFS(ctx, files); err != nil {
		t.Fatalf("rerun: %v", err)
	}
}

// TestMigrateEmbeddedConcurrently applies the real schema from several replicas at once.
func TestMigrateEmbeddedConcurrently(t *testing.T) {
	t.Parallel()
	s := storetest.NewSchema(t, storetest.Unmigrated())
	ctx := context.Background()
	for i, err := range runConcurrently(t, s.Name, func(db *store.DB) error { return db.Migrate(ctx) }) {
		if err != nil {
			t.Errorf("starter %d: %v", i, err)
		}
	}
	want, err := store.EmbeddedMigrations()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(want, "0050_work_queue") {
		t.Errorf("embedded migrations %v lack the work queue", want)
	}
	got, err := s.DB.AppliedMigrations(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("applied (-embedded +applied):\n%s", diff)
	}
}

// TestMigrateFailureRecordsNothing: a failing migration leaves no record and no partial
// schema, and the migrations before it stay applied.
func TestMigrateFailureRecordsNothing(t *testing.T) {
	t.Parallel()
	s := storetest.NewSchema(t, storetest.Unmigrated())
	ctx := context.Background()
	files := fstest.MapFS{
		"0001_ok.sql":     {Data: []byte(`CREATE TABLE ok (n int);`)},
		"0002_broken.sql": {Data: []byte(`CREATE TABLE half (n int); SELECT no_such_function();`)},
	}
	if err := s.DB.MigrateFS(ctx, files); err == nil {
		t.Fatal("broken migration applied without error")
	}
	applied, err := s.DB.AppliedMigrations(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"0001_ok"}, applied); diff != "" {
		t.Errorf("applied (-want +got):\n%s", diff)
	}
	var n int
	if err := s.DB.Pool().QueryRow(ctx, `SELECT count(*) FROM information_schema.tables WHERE table_schema = $1 AND table_name = 'half'`, s.Name).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Error("the broken migration's table survived its rollback")
	}
}

// TestEngineLines: a migration's engine lines become statements on their engine only, and
// every migration that spells a change per engine spells it for both.
func TestEngineLines(t *testing.T) {
	t.Parallel()
	sql := "CREATE TABLE a (x int);\n-- postgres: ALTER TABLE a DROP CONSTRAINT k;\n-- cockroach: DROP INDEX a@k CASCADE;\n-- a comment\n"
	cases := []struct {
		cockroach bool
		want      string
	}{
		{false, "CREATE TABLE a (x int);\nALTER TABLE a DROP CONSTRAINT k;\n-- cockroach: DROP INDEX a@k CASCADE;\n-- a comment\n"},
		{true, "CREATE TABLE a (x int);\n-- postgres: ALTER TABLE a DROP CONSTRAINT k;\nDROP INDEX a@k CASCADE;\n-- a comment\n"},
	}
	for _, tc := range cases {
		if got := store.ForEngine(sql, tc.cockroach); got != tc.want {
			t.Errorf("cockroach=%v:\n%s\nwant\n%s", tc.cockroach, got, tc.want)
		}
	}
	files, err := filepath.Glob("migrations/*.sql")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		body, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		pg, crdb := strings.Count(string(body), "\n-- postgres: "), strings.Count(string(body), "\n-- cockroach: ")
		if pg != crdb {
			t.Errorf("%s: %d postgres lines and %d cockroach lines: each engine needs its spelling", f, pg, crdb)
		}
	}
}
