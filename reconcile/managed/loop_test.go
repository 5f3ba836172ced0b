package managed_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"better-compute.dev/compute/provider"
	"better-compute.dev/compute/reconcile"
	"better-compute.dev/compute/reconcile/managed"
	"better-compute.dev/compute/reconcile/reconciletest"
	"better-compute.dev/compute/store"
	"better-compute.dev/compute/store/storetest"
)

const kind = "test.managed"

// fake is a kind whose provider is a map of names; it logs the steps the loop takes.
type fake struct {
	managed.Base
	steps      []string
	deleting   bool
	pending    bool           // CreatePending
	atProvider map[string]int // resources by name, counting creates
	createErr  error          // Create fails with it
	slowMark   time.Duration  // MarkCreatePending takes this long (a paused replica)
}

func (f *fake) step(s string) { f.steps = append(f.steps, s) }

func (f *fake) ID() string     { return "res_1" }
func (f *fake) Deleting() bool { return f.deleting }
func (f *fake) Observe(context.Context) (managed.Observation, error) {
	f.step("observe")
	return managed.Observation{}, nil
}
func (f *fake) CreatePending() bool { return f.pending }
func (f *fake) Adopt(_ context.Context, name string) (managed.Observation, error) {
	f.step("adopt " + name)
	if f.atProvider[name] > 0 {
		return managed.Found(true), nil
	}
	return managed.Observation{}, nil
}
func (f *fake) MarkCreatePending(_ context.Context, tx store.Tx) error {
	f.step("mark")
	if tx == nil {
		return errors.New("mark outside a transaction")
	}
	time.Sleep(f.slowMark)
	return nil
}
func (f *fake) Create(ctx context.Context, name string) error {
	if _, ok := ctx.Deadline(); !ok {
		return errors.New("create without the window's deadline")
	}
	f.step("create " + name)
	if f.createErr != nil {
		return f.createErr
	}
	f.atProvider[name]++
	return nil
}
func (f *fake) Record(context.Context) (reconcile.Result, error) {
	f.step("record")
	return reconcile.Result{}, nil
}
func (f *fake) Delete(_ context.Context, name string) error {
	f.step("delete " + name)
	delete(f.atProvider, name)
	return nil
}
func (f *fake) Deleted(context.Context) error { f.step("deleted"); return nil }
func (f *fake) Errored(_ context.Context, cause error) (reconcile.Result, error) {
	f.step("errored")
	return reconcile.Result{}, nil
}
func (f *fake) Failing(_ context.Context, cause error) error {
	f.step("failing")
	return cause
}

// run enqueues the fake's resource and runs one pass of it through a Loop with window.
func run(t *testing.T, db *store.DB, res *fake, window time.Duration) {
	t.Helper()
	ctx := context.Background()
	loop := managed.Loop{DB: db, CreateWindow: window}
	r, err := reconcile.New(reconcile.Options{
		DB: db, Holder: "test", Clock: reconciletest.NewClock(time.Now().Add(time.Minute)),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Handlers: map[string]reconcile.Handler{kind: reconcile.HandlerFunc(func(ctx context.Context, l store.Lease) (reconcile.Result, error) {
			return loop.Run(ctx, l, managed.KindFunc(func(context.Context, *managed.Fence) (managed.Resource, error) { return res, nil }))
		})},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := store.ExecuteTx(ctx, db, func(tx store.Tx) error { return store.Enqueue(ctx, tx, kind, res.ID(), nil) }); err != nil {
		t.Fatal(err)
	}
	if n, err := r.RunOnce(ctx); err != nil || n != 1 {
		t.Fatalf("run once: %d items, %v", n, err)
	}
}

// TestLoopSteps: the one loop's order for every kind: observe, adopt by the deterministic name
// only when a create may have gone out, the fenced mark before a create within the window, a
// create refused once the window has passed, terminal refusals to the kind's error record and
// the rest to its failing record.
func TestLoopSteps(t *testing.T) {
	db := storetest.New(t)
	name := managed.ProviderName("res_1")
	cases := []struct {
		reason string
		res    *fake
		window time.Duration
		want   []string
	}{
		{"no create can have gone out: no lookup, mark then create",
			&fake{}, 0, []string{"observe", "mark", "create " + name, "record"}},
		{"a create may have gone out and it made the resource: adopted, not made again",
			&fake{pending: true, atProvider: map[string]int{name: 1}}, 0, []string{"observe", "adopt " + name, "record"}},
		{"a create may have gone out but made nothing: looked up, then created",
			&fake{pending: true}, 0, []string{"observe", "adopt " + name, "mark", "create " + name, "record"}},
		{"the window passed while the mark was written: no create is sent",
			&fake{slowMark: 20 * time.Millisecond}, 10 * time.Millisecond, []string{"observe", "mark", "failing"}},
		{"a refusal that will not heal is the kind's error",
			&fake{createErr: fmt.Errorf("bad size: %w", provider.ErrInvalid)}, 0, []string{"observe", "mark", "create " + name, "errored"}},
		{"a failure a retry may heal is shown as the kind chooses and returned",
			&fake{createErr: fmt.Errorf("503: %w", provider.ErrTransient)}, 0, []string{"observe", "mark", "create " + name, "failing"}},
		{"a row asking for deletion is deleted by name and recorded",
			&fake{deleting: true, atProvider: map[string]int{name: 1}}, 0, []string{"delete " + name, "deleted"}},
	}
	for _, c := range cases {
		if c.res.atProvider == nil {
			c.res.atProvider = map[string]int{}
		}
		run(t, db, c.res, c.window)
		if !slices.Equal(c.res.steps, c.want) {
			t.Errorf("%s: steps %q, want %q", c.reason, c.res.steps, c.want)
		}
		if n := c.res.atProvider[name]; n > 1 {
			t.Errorf("%s: %d resources of the name at the provider, want at most 1", c.reason, n)
		}
	}
}
