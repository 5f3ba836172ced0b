package reconcile

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"better-compute.dev/compute/store"
	"better-compute.dev/compute/store/storetest"
)

// TestLeaseDistrustedWhenRenewalsKeepFailing: with the database unreachable, renewals fail
// without saying the lease is lost; the handler's context must still end (as a lost lease)
// once the lease can no longer be trusted locally, since another replica may claim it then.
func TestLeaseDistrustedWhenRenewalsKeepFailing(t *testing.T) {
	t.Parallel()
	s := storetest.NewSchema(t)
	down, err := storetest.OpenSchema(context.Background(), s.Name)
	if err != nil {
		t.Fatal(err)
	}
	down.Close() // every statement on it now fails
	r, err := New(Options{DB: down, Holder: "a", LeaseTTL: 200 * time.Millisecond, RenewInterval: 20 * time.Millisecond,
		Handlers: map[string]Handler{"k": HandlerFunc(func(context.Context, store.Lease) (Result, error) { return Result{}, nil })},
		Logger:   slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.keepRenewed(ctx, cancel, store.Lease{Kind: "k", ResourceID: "r", Epoch: 1, Holder: "a"}, time.Now())
	}()
	<-ctx.Done()
	<-done
	if !LeaseLost(ctx) {
		t.Errorf("handler context ended with %v, want a lost lease", context.Cause(ctx))
	}
}
