package storetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// OwnDatabase makes a database only the calling benchmark uses (named prefix + random hex),
// points this package at it (EnvURL, for the rest of the test) and returns a function that
// reads the database's own transaction count, committed and rolled back (pg_stat_database),
// through a connection to another database, so the reading does not count itself. The
// database is dropped at cleanup. PostgreSQL only: the test is skipped when the server has no
// such view or the URL names no database to replace.
func OwnDatabase(t testing.TB, prefix string) (xacts func() int64) {
	t.Helper()
	ctx := context.Background()
	base := BaseURL()
	admin, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Skipf("no database: %v", err)
	}
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	name := prefix + hex.EncodeToString(b)
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = admin.Exec(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
		_ = admin.Close(context.Background())
	})
	u := strings.Replace(base, "/postgres?", "/"+name+"?", 1)
	if u == base {
		t.Skipf("cannot derive a database URL from %s", base)
	}
	t.Setenv(EnvURL, u)
	return func() int64 {
		var n int64
		if err := admin.QueryRow(ctx, `SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = $1`, name).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
}
