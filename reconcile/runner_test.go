package reconcile_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"better-compute.dev/compute/provider"
	"better-compute.dev/compute/reconcile"
	"better-compute.dev/compute/reconcile/reconciletest"
	"better-compute.dev/compute/store"
	"better-compute.dev/compute/store/storetest"
)

const kind = "test.widgets"

var quiet = slog.New(slog.DiscardHandler)

// fixture is a per-test bundle: a fresh schema, a manual clock and a results table the
// handlers write to through reconcile.WriteResult.
type fixture struct {
	t     *testing.T
	ctx   context.Context
	db    *store.DB
	clock *reconciletest.Clock
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{t: t, ctx: context.Background(), db: storetest.New(t), clock: reconciletest.NewClock(time.Now().Add(time.Minute))}
	if _, err := f.db.Pool().Exec(f.ctx, `CREATE TABLE results (id text PRIMARY KEY, holder text NOT NULL, epoch int8 NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	return f
}

// runner builds a runner on the fixture's clock; opts fills in what a test cares about.
func (f *fixture) runner(holder string, h reconcile.Handler, opts reconcile.Options) *reconcile.Runner {
	f.t.Helper()
	opts.DB, opts.Holder, opts.Logger = f.db, holder, quiet
	if opts.Clock == nil {
		opts.Clock = f.clock
	}
	if h != nil {
		opts.Handlers = map[string]reconcile.Handler{kind: h}
	}
	r, err := reconcile.New(opts)
	if err != nil {
		f.t.Fatal(err)
	}
	return r
}

func (f *fixture) enqueue(ids ...string) {
	f.t.Helper()
	err := store.ExecuteTx(f.ctx, f.db, func(tx pgx.Tx) error {
		for _, id := range ids {
			if err := store.Enqueue(f.ctx, tx, kind, id, nil); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) item(id string) store.WorkItem {
	f.t.Helper()
	w, err := f.db.WorkItem(f.ctx, kind, id)
	if err != nil {
		f.t.Fatal(err)
	}
	return w
}

func (f *fixture) runOnce(r *reconcile.Runner) int {
	f.t.Helper()
	n, err := r.RunOnce(f.ctx)
	if err != nil {
		f.t.Fatal(err)
	}
	return n
}

// writeResult records that holder reconciled the lease's resource, fenced on the lease.
func writeResult(ctx context.Context, db *store.DB, l store.Lease) error {
	return reconcile.WriteResult(ctx, db, l, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO results (id, holder, epoch) VALUES ($1, $2, $3)
			ON CONFLICT (id) DO UPDATE SET holder = excluded.holder, epoch = excluded.epoch`, l.ResourceID, l.Holder, l.Epoch)
		return err
	})
}

// TestRunnersShareTheQueue: four replicas drain 500 items with Run; every item is handled,
// and never by two handlers at once.
func TestRunnersShareTheQueue(t *testing.T) {
	t.Parallel()
	const replicas, items = 4, 500
	s := storetest.NewSchema(t)
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	if _, err := s.DB.Pool().Exec(ctx, `CREATE TABLE results (id text PRIMARY KEY, holder text NOT NULL, epoch int8 NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	if err := store.ExecuteTx(ctx, s.DB, func(tx pgx.Tx) error {
		for i := range items {
			if err := store.Enqueue(ctx, tx, kind, fmt.Sprintf("w%03d", i), nil); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex
	inFlight := map[string]string{} // resource -> holder running it now
	handled := map[string]int{}
	var overlaps []string
	var wg sync.WaitGroup
	for i := range replicas {
		db, err := storetest.OpenSchema(ctx, s.Name) // each replica has its own pool
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(db.Close)
		holder := fmt.Sprintf("replica-%d", i)
		h := reconcile.HandlerFunc(func(ctx context.Context, l store.Lease) (reconcile.Result, error) {
			mu.Lock()
			if other, busy := inFlight[l.ResourceID]; busy {
				overlaps = append(overlaps, fmt.Sprintf("%s run by %s and %s", l.ResourceID, other, l.Holder))
			}
			inFlight[l.ResourceID] = l.Holder
			mu.Unlock()
			err := writeResult(ctx, db, l)
			mu.Lock()
			delete(inFlight, l.ResourceID)
			handled[l.ResourceID]++
			mu.Unlock()
			return reconcile.Result{}, err
		})
		r, err := reconcile.New(reconcile.Options{DB: db, Holder: holder, Handlers: map[string]reconcile.Handler{kind: h},
			Concurrency: 4, PollInterval: 10 * time.Millisecond, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := r.Run(ctx); err != nil {
				t.Errorf("%s: Run: %v", holder, err)
			}
		}()
	}
	reconciletest.WaitDrained(t, ctx, s.DB, []string{kind}, nil, 2*time.Minute)
	stop()
	wg.Wait()

	mu.Lock()
	defer mu.Unlock()
	for _, o := range overlaps {
		t.Error(o)
	}
	if len(handled) != items {
		t.Errorf("%d items handled, want %d", len(handled), items)
	}
	var n int
	if err := s.DB.Pool().QueryRow(context.Background(), `SELECT count(*) FROM results`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != items {
		t.Errorf("%d results written, want %d", n, items)
	}
}

// TestTakeoverFencesTheStaleHolder: replica a stalls past its lease; b takes the item over
// and finishes it; a's late result and outcome are refused.
func TestTakeoverFencesTheStaleHolder(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.enqueue("w1")
	started, resume := make(chan struct{}), make(chan struct{})
	var staleErr error
	a := f.runner("a", reconcile.HandlerFunc(func(ctx context.Context, l store.Lease) (reconcile.Result, error) {
		close(started)
		<-resume // paused: no renewals land within the test (RenewInterval below)
		staleErr = writeResult(ctx, f.db, l)
		return reconcile.Result{}, staleErr
	}), reconcile.Options{RenewInterval: 20 * time.Second})
	b := f.runner("b", reconcile.HandlerFunc(func(ctx context.Context, l store.Lease) (reconcile.Result, error) {
		return reconcile.Result{}, writeResult(ctx, f.db, l)
	}), reconcile.Options{})

	aDone := make(chan int)
	go func() { aDone <- f.runOnce(a) }()
	<-started
	f.clock.Advance(reconcile.DefaultLeaseTTL + time.Second)
	if n := f.runOnce(b); n != 1 {
		t.Fatalf("b ran %d items, want the expired one", n)
	}
	close(resume)
	<-aDone

	if !errors.Is(staleErr, store.ErrLeaseLost) {
		t.Errorf("stale holder's WriteResult: err = %v, want ErrLeaseLost", staleErr)
	}
	var holder string
	if err := f.db.Pool().QueryRow(f.ctx, `SELECT holder FROM results WHERE id = 'w1'`).Scan(&holder); err != nil {
		t.Fatal(err)
	}
	if holder != "b" {
		t.Errorf("result written by %q, want b", holder)
	}
	if w := f.item("w1"); w.DueAt != nil || w.Holder != "" || w.Attempts != 0 || w.LastError != "" {
		t.Errorf("item after b's success: %+v, want idle with no error", w)
	}
}

// TestLostRenewalCancelsTheHandler: when a renewal finds the epoch moved, the handler's
// context ends as a lost lease, and the runner writes nothing.
func TestLostRenewalCancelsTheHandler(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.enqueue("w1")
	started := make(chan struct{})
	var sawLost bool
	r := f.runner("a", reconcile.HandlerFunc(func(ctx context.Context, l store.Lease) (reconcile.Result, error) {
		close(started)
		<-ctx.Done()
		sawLost = reconcile.LeaseLost(ctx)
		return reconcile.Result{}, ctx.Err()
	}), reconcile.Options{RenewInterval: 10 * time.Millisecond})
	done := make(chan int)
	go func() { done <- f.runOnce(r) }()
	<-started
	// Another replica's claim, as the row sees it: the epoch moves on.
	if _, err := f.db.Pool().Exec(f.ctx, `UPDATE work_items SET epoch = epoch + 1, lease_holder = 'b' WHERE resource_id = 'w1'`); err != nil {
		t.Fatal(err)
	}
	<-done
	if !sawLost {
		t.Error("handler context did not end as a lost lease")
	}
	if w := f.item("w1"); w.Holder != "b" || w.Attempts != 0 || w.LastError != "" {
		t.Errorf("item after the lost lease: %+v, want b's lease untouched", w)
	}
}

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
		if msg, _ := f.db.LastError(f.ctx, kind, "w1"); msg != s.lastError {
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

// TestPeriodicPassRunsOncePerPeriod: three replicas declare the same pass; in each period,
// however often they poll, it runs once.
func TestPeriodicPassRunsOncePerPeriod(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	const interval = 5 * time.Minute
	var runs atomic.Int32
	pass := reconcile.HandlerFunc(func(_ context.Context, l store.Lease) (reconcile.Result, error) {
		if l.ResourceID != store.PeriodicResourceID {
			t.Errorf("periodic lease on %q", l.ResourceID)
		}
		runs.Add(1)
		return reconcile.Result{}, nil
	})
	var runners []*reconcile.Runner
	for i := range 3 {
		r := f.runner(fmt.Sprintf("replica-%d", i), nil, reconcile.Options{})
		if err := r.Every("test.sweep", interval, pass); err != nil {
			t.Fatal(err)
		}
		runners = append(runners, r)
	}
	const periods = 4
	for p := 1; p <= periods; p++ {
		for range 2 { // every replica polls twice per period
			var wg sync.WaitGroup
			for _, r := range runners {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if _, err := r.RunOnce(f.ctx); err != nil {
						t.Error(err)
					}
				}()
			}
			wg.Wait()
		}
		if got := runs.Load(); got != int32(p) {
			t.Fatalf("after period %d the pass ran %d times, want %d", p, got, p)
		}
		f.clock.Advance(interval)
	}
}

// TestGracefulStop: Run returns only after its handlers finish. One that finishes within the
// grace records its outcome; one cut off by the end of the grace releases its item, due and
// without a counted attempt, to another replica.
func TestGracefulStop(t *testing.T) {
	t.Parallel()
	cases := []struct {
		reason      string
		grace       time.Duration
		ignoreCtx   bool
		wantDue     bool
		wantHandled bool
	}{
		{reason: "a handler finishing within the grace completes", grace: time.Hour, ignoreCtx: true, wantHandled: true},
		{reason: "a handler cut off releases its item", grace: -1, wantDue: true},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			f.enqueue("w1")
			started, finish := make(chan struct{}), make(chan struct{})
			var finished atomic.Bool
			r := f.runner("a", reconcile.HandlerFunc(func(ctx context.Context, l store.Lease) (reconcile.Result, error) {
				defer finished.Store(true)
				close(started)
				if tc.ignoreCtx {
					<-finish
					return reconcile.Result{}, nil
				}
				<-ctx.Done()
				return reconcile.Result{}, ctx.Err()
			}), reconcile.Options{ShutdownGrace: tc.grace, PollInterval: 10 * time.Millisecond})
			ctx, stop := context.WithCancel(context.Background())
			returned := make(chan error)
			go func() { returned <- r.Run(ctx) }()
			<-started
			stop()
			if tc.ignoreCtx {
				close(finish)
			}
			if err := <-returned; err != nil {
				t.Fatalf("Run: %v", err)
			}
			if !finished.Load() {
				t.Fatal("Run returned before its handler finished")
			}
			w := f.item("w1")
			if (w.DueAt != nil) != tc.wantDue || w.Holder != "" || w.Attempts != 0 {
				t.Errorf("item after stop: %+v, want due=%v, free, no attempt counted", w, tc.wantDue)
			}
		})
	}
}

func TestNewRejectsBadOptions(t *testing.T) {
	t.Parallel()
	db := storetest.New(t)
	h := map[string]reconcile.Handler{kind: reconcile.HandlerFunc(func(context.Context, store.Lease) (reconcile.Result, error) {
		return reconcile.Result{}, nil
	})}
	cases := []struct {
		reason string
		opts   reconcile.Options
	}{
		{reason: "no database", opts: reconcile.Options{Holder: "a", Handlers: h}},
		{reason: "no holder", opts: reconcile.Options{DB: db, Handlers: h}},
		{reason: "renewing no sooner than the lease lapses", opts: reconcile.Options{DB: db, Holder: "a", Handlers: h, LeaseTTL: time.Second, RenewInterval: time.Second}},
		{reason: "a nil handler", opts: reconcile.Options{DB: db, Holder: "a", Handlers: map[string]reconcile.Handler{kind: nil}}},
	}
	for _, tc := range cases {
		if _, err := reconcile.New(tc.opts); err == nil {
			t.Errorf("%s: accepted", tc.reason)
		}
	}
	r, err := reconcile.New(reconcile.Options{DB: db, Holder: "a", Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Run(context.Background()); err == nil {
		t.Error("Run without handlers started")
	}
	if err := r.Every("late", time.Minute, h[kind]); err == nil {
		t.Error("Every after Run accepted")
	}
}

func TestPruneIdleWorkPass(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.enqueue("w1")
	r := f.runner("a", reconcile.HandlerFunc(func(context.Context, store.Lease) (reconcile.Result, error) {
		return reconcile.Result{}, nil
	}), reconcile.Options{})
	if err := r.Every("test.prune", time.Hour, reconcile.PruneIdleWork(f.db, time.Hour)); err != nil {
		t.Fatal(err)
	}
	if n := reconciletest.Drain(t, f.ctx, r); n != 2 { // w1 and the first prune pass
		t.Fatalf("ran %d items, want 2", n)
	}
	// w1 finished moments ago: far from idle for an hour, so it stays.
	if w := f.item("w1"); w.DueAt != nil {
		t.Errorf("w1 still due: %+v", w)
	}
	if _, err := f.db.WorkItem(f.ctx, "test.prune", store.PeriodicResourceID); err != nil {
		t.Errorf("the prune pass's own row: %v", err)
	}
}
