package substrates_test

import (
	"testing"
	"time"

	"better-compute.dev/compute/reconcile/substrates"
	"better-compute.dev/compute/store"
)

// TestClusterCreateRefusedOnceTheWindowHasPassed: the create window starts before the fenced
// create-pending mark, as for load balancers, so a replica held up between its mark and the
// request (here: its mark waits on a row lock another connection holds for longer than the
// window) sends no create when it resumes: the mark is recorded, no cluster request reaches
// the provider, and the pass is retried. A window started after the mark would have let the
// create go out.
func TestClusterCreateRefusedOnceTheWindowHasPassed(t *testing.T) {
	const window = 500 * time.Millisecond
	e := newEnvWith(t, "paused", func(o *substrates.Options) { o.CreateWindow = window })
	e.setPolicy(t, createPolicy(e.tn.AccountID))
	sub := e.substrate(t)

	pool := e.s.App.DB.Pool()
	lock, err := pool.Begin(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = lock.Rollback(e.ctx) }()
	var lockPID int
	if err := lock.QueryRow(e.ctx, `SELECT pg_backend_pid() FROM substrates WHERE id = $1 FOR UPDATE`, sub.ID).Scan(&lockPID); err != nil {
		t.Fatal(err)
	}
	passed := make(chan error, 1)
	go func() {
		_, err := e.runner.RunOnce(e.ctx)
		passed <- err
	}()
	// Wait until the pass's mark is blocked on the lock, then keep it there past the window.
	for {
		var waiting int
		if err := pool.QueryRow(e.ctx, `SELECT count(*) FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))`, lockPID).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting > 0 {
			break
		}
		select {
		case err := <-passed:
			t.Fatalf("the pass ended before its mark met the lock: %v", err)
		case <-time.After(10 * time.Millisecond):
		}
	}
	time.Sleep(2 * window)
	if err := lock.Commit(e.ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-passed; err != nil {
		t.Fatal(err)
	}

	if n := e.sim.Requests()["POST /v2/kubernetes/clusters"]; n != 0 {
		t.Fatalf("%d cluster creates reached the provider after the window had passed, want 0", n)
	}
	if cs := e.clusters(t); len(cs) != 0 {
		t.Fatalf("clusters at the provider %v, want none", names(cs))
	}
	sub = e.substrate(t)
	if sub.CreatePendingAt == nil || sub.ClusterID != "" {
		t.Fatalf("substrate %+v: want the create-pending mark written and no cluster recorded", sub)
	}
	item, err := store.GetWorkItem(e.ctx, e.s.App.DB, substrates.Kind, e.tn.PoolID)
	if err != nil {
		t.Fatal(err)
	}
	if item.Attempts != 1 || item.DueAt == nil {
		t.Fatalf("work item %+v: want the refused create to be retried", item)
	}
}
