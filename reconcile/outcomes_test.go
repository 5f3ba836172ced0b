package reconcile_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"better-compute.dev/compute/provider"
	"better-compute.dev/compute/reconcile"
	"better-compute.dev/compute/reconcile/reconciletest"
	"better-compute.dev/compute/store"
)

func TestEnqueueDuringProcessingRunsAgain(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.enqueue("w1")
	var generations []int64
	r := f.runner("a", reconcile.HandlerFunc(func(ctx context.Context, l store.Lease) (reconcile.Result, error) {
		generations = append(generations, l.Generation)
		if len(generations) == 1 {
			f.enqueue("w1") // the tenant changes the resource meanwhile
		}
		return reconcile.Result{}, nil
	}), reconcile.Options{})
	if n := reconciletest.Drain(t, f.ctx, r); n != 2 {
		t.Errorf("ran %d times, want 2", n)
	}
	if len(generations) != 2 || generations[0] != 1 || generations[1] != 2 {
		t.Errorf("generations seen %v, want [1 2]", generations)
	}
}

// TestRetriesBackOffThenSucceed: failures back off exponentially and keep the last shown
// error (a transient failure does not replace it); success clears it.
func TestRetriesBackOffThenSucceed(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.enqueue("w1")
	outcomes := []error{
		errors.New("certificate pcert_x is not ready"),
		fmt.Errorf("get load balancer: %w", provider.ErrTransient),
		errors.New("region nyc9 is unknown"),
		nil,
	}
	calls := 0
	r := f.runner("a", reconcile.HandlerFunc(func(context.Context, store.Lease) (reconcile.Result, error) {
		err := outcomes[calls]
		calls++
		return reconcile.Result{}, err
	}), reconcile.Options{Backoff: reconcile.Exponential{Initial: 10 * time.Second, Max: time.Minute}})

	steps := []struct {
		reason    string
		wait      time.Duration
		lastError string
		attempts  int
	}{
		{reason: "first failure", wait: 10 * time.Second, lastError: "certificate pcert_x is not ready", attempts: 1},
		{reason: "transient failure keeps the shown error", wait: 20 * time.Second, lastError: "certificate pcert_x is not ready", attempts: 2},
		{reason: "third failure", wait: 40 * time.Second, lastError: "region nyc9 is unknown", attempts: 3},
	}
	for _, s := range steps {
		if n := f.runOnce(r); n != 1 {
			t.Fatalf("%s: ran %d items, want 1", s.reason, n)
		}
		w := f.item("w1")
		if w.Attempts != s.attempts || w.LastError != s.lastError || w.DueAt == nil || !w.DueAt.Equal(f.clock.Now().Add(s.wait)) {
			t.Fatalf("%s: item %+v, want attempts %d, last error %q, due in %v", s.reason, w, s.attempts, s.lastError, s.wait)
		}
		if msg, _ := store.LastError(f.ctx, f.db, kind, "w1"); msg != s.lastError {
			t.Errorf("%s: LastError = %q", s.reason, msg)
		}
		f.clock.Advance(s.wait - time.Second)
		if n := f.runOnce(r); n != 0 {
			t.Fatalf("%s: ran before the backoff elapsed", s.reason)
		}
		f.clock.Advance(time.Second)
	}
	if n := f.runOnce(r); n != 1 {
		t.Fatalf("final attempt ran %d items", n)
	}
	if w := f.item("w1"); w.DueAt != nil || w.Attempts != 0 || w.LastError != "" {
		t.Errorf("after success: %+v, want idle and cleared", w)
	}
}

func TestRateLimitHonoursRetryAfter(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.enqueue("w1")
	calls := 0
	r := f.runner("a", reconcile.HandlerFunc(func(context.Context, store.Lease) (reconcile.Result, error) {
		calls++
		if calls == 1 {
			return reconcile.Result{}, fmt.Errorf("create load balancer: %w", &provider.RateLimitedError{RetryAfter: f.clock.Now().Add(42 * time.Second)})
		}
		return reconcile.Result{}, nil
	}), reconcile.Options{Backoff: reconcile.Exponential{Initial: time.Second}})
	f.runOnce(r)
	if w := f.item("w1"); w.DueAt == nil || !w.DueAt.Equal(f.clock.Now().Add(42*time.Second)) {
		t.Fatalf("due %v, want the provider's RetryAfter %v", w.DueAt, f.clock.Now().Add(42*time.Second))
	}
	f.clock.Advance(41 * time.Second)
	if n := f.runOnce(r); n != 0 {
		t.Fatal("ran before RetryAfter")
	}
	f.clock.Advance(time.Second)
	if n := f.runOnce(r); n != 1 || calls != 2 {
		t.Fatalf("ran %d items (calls %d) at RetryAfter, want 1 (2)", n, calls)
	}
}

func TestRequeueAfterPolls(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.enqueue("w1")
	polls := 0
	r := f.runner("a", reconcile.HandlerFunc(func(context.Context, store.Lease) (reconcile.Result, error) {
		polls++
		if polls < 3 { // the load balancer is still "new"
			return reconcile.Result{RequeueAfter: 15 * time.Second}, nil
		}
		return reconcile.Result{}, nil
	}), reconcile.Options{})
	for polls < 3 {
		if n := reconciletest.Drain(t, f.ctx, r); n != 1 {
			t.Fatalf("poll %d: ran %d items, want 1", polls, n)
		}
		f.clock.Advance(15 * time.Second)
	}
	if w := f.item("w1"); w.DueAt != nil {
		t.Errorf("item still due at %v after the final poll", w.DueAt)
	}
}

func TestHandlerPanicIsRetried(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.enqueue("w1")
	r := f.runner("a", reconcile.HandlerFunc(func(context.Context, store.Lease) (reconcile.Result, error) {
		panic("nil map")
	}), reconcile.Options{})
	f.runOnce(r)
	if w := f.item("w1"); w.Attempts != 1 || w.LastError == "" || w.Holder != "" {
		t.Errorf("after a panic: %+v, want a recorded failed attempt", w)
	}
}

func TestPruneWorkPass(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.enqueue("w1")
	r := f.runner("a", reconcile.HandlerFunc(func(context.Context, store.Lease) (reconcile.Result, error) {
		return reconcile.Result{}, nil
	}), reconcile.Options{})
	if err := r.Every("test.prune", time.Hour, reconcile.Prune(f.db, store.RetainedWork, time.Hour)); err != nil {
		t.Fatal(err)
	}
	if n := reconciletest.Drain(t, f.ctx, r); n != 2 { // w1 and the first prune pass
		t.Fatalf("ran %d items, want 2", n)
	}
	// w1 finished moments ago: far from idle for an hour, so it stays.
	if w := f.item("w1"); w.DueAt != nil {
		t.Errorf("w1 still due: %+v", w)
	}
	if _, err := store.GetWorkItem(f.ctx, f.db, "test.prune", store.PeriodicResourceID); err != nil {
		t.Errorf("the prune pass's own row: %v", err)
	}
}
