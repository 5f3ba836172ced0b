package reconcile

import (
	"context"
	"errors"
	"fmt"
	"time"

	"better-compute.dev/compute/store"
)

// process runs one claimed item: the handler under a renewed lease, then its outcome.
func (r *Runner) process(base context.Context, l store.Lease) {
	claimedAt := time.Now() // a slight overestimate of the lease's start is the safe side
	hctx, cancel := context.WithCancelCause(base)
	renewed := make(chan struct{})
	go func() {
		defer close(renewed)
		r.keepRenewed(hctx, cancel, l, claimedAt)
	}()

	res, err := r.call(hctx, l)
	lost := LeaseLost(hctx)
	cancel(errHandlerDone)
	<-renewed // no renewal may land after the outcome is written

	if lost || errors.Is(err, store.ErrLeaseLost) {
		r.opts.Logger.Info("reconcile: lease lost, outcome discarded",
			"kind", l.Kind, "resource", l.ResourceID, "epoch", l.Epoch, "holder", l.Holder)
		return
	}
	stopping := base.Err() != nil
	wctx, wcancel := context.WithTimeout(context.WithoutCancel(base), writeTimeout)
	defer wcancel()
	if werr := r.record(wctx, l, res, err, stopping); werr != nil {
		level := "reconcile: recording outcome failed; the lease will expire and the item run again"
		if errors.Is(werr, store.ErrLeaseLost) {
			level = "reconcile: lease lost before the outcome was recorded"
		}
		r.opts.Logger.Warn(level, "kind", l.Kind, "resource", l.ResourceID, "epoch", l.Epoch, "err", werr)
	}
}

// errHandlerDone is the cause of a handler context ended because the handler returned.
var errHandlerDone = errors.New("reconcile: handler returned")

// call runs the handler, turning a panic into an error so one bad resource cannot take the
// replica down.
func (r *Runner) call(ctx context.Context, l store.Lease) (res Result, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("reconcile: handler for %s panicked: %v", l.Kind, p)
		}
	}()
	return r.handlers[l.Kind].Reconcile(ctx, l)
}

// record writes the outcome of one attempt, fenced on the lease.
func (r *Runner) record(ctx context.Context, l store.Lease, res Result, herr error, stopping bool) error {
	db, now := r.opts.DB, r.now()
	interval, periodic := r.periodic[l.Kind]
	if herr == nil {
		after := res.RequeueAfter
		if periodic && (after <= 0 || after > interval) {
			after = interval
		}
		if after > 0 {
			return store.Requeue(ctx, db, store.RequeueParams{Lease: l, After: after, Now: now})
		}
		return store.Complete(ctx, db, store.CompleteParams{Lease: l, Now: now})
	}
	if stopping && (errors.Is(herr, context.Canceled) || errors.Is(herr, context.DeadlineExceeded)) {
		// Interrupted by our own shutdown, not a failure: hand the item to another replica.
		return store.Release(ctx, db, store.ReleaseParams{Lease: l, Now: now})
	}
	p := store.RetryParams{Lease: l, Now: now}
	var at RetryAtError
	switch {
	case errors.As(herr, &at):
		p.After = at.RetryAt().Sub(r.localNow())
	case Transient(herr):
		p.After = r.opts.Backoff.Delay(l.Attempts + 1)
	default:
		p.After = r.opts.Backoff.Delay(l.Attempts + 1)
		p.Error = herr.Error()
	}
	if periodic && p.After > interval {
		p.After = interval
	}
	return store.Retry(ctx, db, p)
}

// keepRenewed renews the lease every RenewInterval until ctx ends. It cancels ctx with
// store.ErrLeaseLost when a renewal finds the lease taken, or when renewals keep failing
// until the lease can no longer be trusted locally: claim (or last renewal) time + TTL minus a
// safety margin, measured on this process's monotonic clock.
func (r *Runner) keepRenewed(ctx context.Context, cancel context.CancelCauseFunc, l store.Lease, since time.Time) {
	ttl, margin := r.opts.LeaseTTL, r.opts.LeaseTTL/10
	trustUntil := since.Add(ttl - margin)
	tick := time.NewTicker(r.opts.RenewInterval)
	defer tick.Stop()
	expiry := time.NewTimer(time.Until(trustUntil))
	defer expiry.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-expiry.C:
			cancel(fmt.Errorf("lease not renewed in time: %w", store.ErrLeaseLost))
			return
		case <-tick.C:
		}
		attemptAt := time.Now()
		rctx, rcancel := context.WithTimeout(ctx, r.opts.RenewInterval)
		_, err := store.Renew(rctx, r.opts.DB, store.RenewParams{Lease: l, LeaseTTL: ttl, Now: r.now()})
		rcancel()
		switch {
		case err == nil:
			trustUntil = attemptAt.Add(ttl - margin)
			expiry.Reset(time.Until(trustUntil))
		case errors.Is(err, store.ErrLeaseLost):
			cancel(err)
			return
		case ctx.Err() == nil:
			// A database hiccup: keep trying until the lease can no longer be trusted.
			r.opts.Logger.Warn("reconcile: renewing lease failed", "kind", l.Kind, "resource", l.ResourceID, "err", err)
		}
	}
}
