package storetest

import (
	"context"
	"testing"
	"time"

	"better-compute.dev/compute/store"
)

// statsFlush is how long a backend may keep its counters before it reports them to the
// server's statistics (PostgreSQL flushes them when it goes idle, at most once a second).
const statsFlush = 2500 * time.Millisecond

// Deadlocks returns how many deadlocks the server has broken in db's database so far
// (pg_stat_database.deadlocks), after waiting long enough for every backend to have reported
// what it counted. Run the test on a server of its own (StartServer) when the count must be
// its own: other tests on a shared server add theirs.
func Deadlocks(t testing.TB, db *store.DB) int64 {
	t.Helper()
	time.Sleep(statsFlush)
	ctx := context.Background()
	var n int64
	// A statement outside a transaction reads fresh statistics (no snapshot is kept).
	if err := db.Pool().QueryRow(ctx, `SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()`).Scan(&n); err != nil {
		t.Fatalf("storetest: deadlocks: %v", err)
	}
	return n
}
