package storetest

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestURLReachesTheSchema: a separately started process given Schema.URL works in the test's
// schema.
func TestURLReachesTheSchema(t *testing.T) {
	t.Parallel()
	s := NewSchema(t)
	if !strings.Contains(s.URL, "options=-csearch_path%3D"+s.Name) {
		t.Errorf("URL %q does not carry the search_path option", s.URL)
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, s.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var schema string
	if err := conn.QueryRow(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
		t.Fatal(err)
	}
	if schema != s.Name {
		t.Errorf("current_schema() = %q, want %q", schema, s.Name)
	}
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM work_items`).Scan(&n); err != nil {
		t.Errorf("migrated table not visible through the URL: %v", err)
	}
}

func TestSchemasAreIsolatedAndDropped(t *testing.T) {
	t.Parallel()
	var name string
	t.Run("make", func(t *testing.T) {
		a, b := NewSchema(t), NewSchema(t)
		if a.Name == b.Name {
			t.Fatalf("two tests share schema %s", a.Name)
		}
		name = a.Name
	})
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, BaseURL())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM information_schema.schemata WHERE schema_name = $1`, name).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("schema %s survived its test", name)
	}
}

// recorder stands in for a test to observe whether storetest skips or fails it.
type recorder struct {
	testing.TB
	skipped, failed bool
}

type stopTest struct{}

func (r *recorder) Helper()               {}
func (r *recorder) Skip(...any)           { r.skipped = true; panic(stopTest{}) }
func (r *recorder) Fatal(...any)          { r.failed = true; panic(stopTest{}) }
func (r *recorder) Fatalf(string, ...any) { r.failed = true; panic(stopTest{}) }

// TestUnreachableDatabase: skipped on a workstation, a failure in CI; the message never
// shows the password.
func TestUnreachableDatabase(t *testing.T) {
	cases := []struct {
		reason string
		ci     string
		want   string
	}{
		{reason: "outside CI the test is skipped", ci: "", want: "skipped"},
		{reason: "in CI the test fails", ci: "true", want: "failed"},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			t.Setenv(EnvURL, "postgres://postgres:hunter2@127.0.0.1:1/postgres?sslmode=disable&connect_timeout=2")
			t.Setenv("CI", tc.ci)
			r := &recorder{TB: t}
			func() {
				defer func() {
					if p := recover(); p != nil && p != (stopTest{}) {
						panic(p)
					}
				}()
				NewSchema(r)
			}()
			got := map[bool]string{true: "skipped"}[r.skipped] + map[bool]string{true: "failed"}[r.failed]
			if got != tc.want {
				t.Errorf("outcome %q, want %q", got, tc.want)
			}
		})
	}
	if strings.Contains(redact("postgres://postgres:hunter2@h/db"), "hunter2") {
		t.Error("redact kept the password")
	}
}
