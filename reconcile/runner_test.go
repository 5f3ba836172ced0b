package reconcile_test

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

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
	err := store.ExecuteTx(f.ctx, f.db, func(tx store.Tx) error {
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
	w, err := store.GetWorkItem(f.ctx, f.db, kind, id)
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
	return reconcile.WriteResult(ctx, db, l, func(tx store.Tx) error {
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
	if err := store.ExecuteTx(ctx, s.DB, func(tx store.Tx) error {
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
