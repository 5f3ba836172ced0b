package reconcile

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"

	"better-compute.dev/compute/store"
)

// Defaults of Options.
const (
	DefaultConcurrency   = 4
	DefaultLeaseTTL      = 30 * time.Second
	DefaultPollInterval  = time.Second
	DefaultShutdownGrace = 10 * time.Second
	// writeTimeout bounds the write of a handler's outcome, which runs even while stopping.
	writeTimeout = 10 * time.Second
)

// Clock tells the time used for leases and due times. Tests inject a manual clock to move
// time without sleeping; production leaves it nil and the database clock is used, so that
// replicas with skewed clocks agree on expiry.
type Clock interface {
	Now() time.Time
}

// Options configure a Runner.
type Options struct {
	// DB holds the work queue.
	DB *store.DB
	// Holder names this replica in the leases; it must differ between running processes
	// (the pod name, for example).
	Holder string
	// Handlers maps a work kind to its reconciler. Periodic passes are added with Every.
	Handlers map[string]Handler
	// Concurrency is how many handlers run at once (default 4).
	Concurrency int
	// LeaseTTL is how long a lease lasts without renewal (default 30 s).
	LeaseTTL time.Duration
	// RenewInterval is how often a held lease is renewed (default LeaseTTL/3).
	RenewInterval time.Duration
	// PollInterval is the pause after a claim that found nothing to do (default 1 s).
	PollInterval time.Duration
	// Backoff paces retries after failures (default DefaultBackoff).
	Backoff Backoff
	// Clock overrides the database clock (tests); nil means the database's now().
	Clock Clock
	// ShutdownGrace is how long running handlers may go on after Run's context ends before
	// their contexts are cancelled (default 10 s; negative: cancel at once).
	ShutdownGrace time.Duration
	// Logger receives lease losses and failures to record outcomes (default slog.Default()).
	Logger *slog.Logger
	// Shares bound each kind's use of the slots (see Share); a kind absent takes the default
	// share.
	Shares map[string]Share
}

// Share bounds one kind's part of a runner's Concurrency slots, so that one slow kind (hung
// BMCs) never holds the slots another kind needs, and within a kind one fairness group (a
// tenant, named by store.EnqueueGroup) never holds every slot of the kind.
type Share struct {
	// Slots is the most handlers of the kind that run at once (0: the default share, which is
	// every slot but one when the runner has more than one kind, so any one kind leaves room
	// for the others; at most Concurrency).
	Slots int
	// PerGroup is the most handlers of one group of the kind that run at once (0: no bound).
	PerGroup int
}

// Runner claims work items of its kinds and runs their handlers. Many replicas run one each
// on the same database; the leases make each item run on one replica at a time.
type Runner struct {
	opts     Options
	handlers map[string]Handler
	periodic map[string]time.Duration

	mu       sync.Mutex
	started  bool
	ensured  bool
	kinds    []string
	inFlight sync.WaitGroup
	// running counts the handlers of each kind in flight (under mu).
	running map[string]int
}

// New checks opts and fills in the defaults.
func New(opts Options) (*Runner, error) {
	if opts.DB == nil {
		return nil, errors.New("reconcile: Options.DB is required")
	}
	if opts.Holder == "" {
		return nil, errors.New("reconcile: Options.Holder is required")
	}
	if opts.Concurrency <= 0 {
		opts.Concurrency = DefaultConcurrency
	}
	if opts.LeaseTTL <= 0 {
		opts.LeaseTTL = DefaultLeaseTTL
	}
	if opts.RenewInterval <= 0 {
		opts.RenewInterval = opts.LeaseTTL / 3
	}
	if opts.RenewInterval >= opts.LeaseTTL {
		return nil, fmt.Errorf("reconcile: renew interval %v must be shorter than the lease TTL %v", opts.RenewInterval, opts.LeaseTTL)
	}
	if opts.PollInterval <= 0 {
		opts.PollInterval = DefaultPollInterval
	}
	if opts.Backoff == nil {
		opts.Backoff = DefaultBackoff
	}
	if opts.ShutdownGrace == 0 {
		opts.ShutdownGrace = DefaultShutdownGrace
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	for kind, sh := range opts.Shares {
		if sh.Slots < 0 || sh.PerGroup < 0 {
			return nil, fmt.Errorf("reconcile: share of kind %q is negative", kind)
		}
	}
	r := &Runner{opts: opts, handlers: map[string]Handler{}, periodic: map[string]time.Duration{}, running: map[string]int{}}
	for kind, h := range opts.Handlers {
		if kind == "" || h == nil {
			return nil, fmt.Errorf("reconcile: handler for kind %q is missing", kind)
		}
		r.handlers[kind] = h
	}
	return r, nil
}

// Every registers a periodic pass: h runs on one replica per interval, on the kind's
// singleton item (resource id store.PeriodicResourceID), first as soon as the item is new,
// then interval after each completed pass (a failed pass retries with backoff, capped at the
// interval). Call it before Run.
func (r *Runner) Every(kind string, interval time.Duration, h Handler) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.started:
		return errors.New("reconcile: Every after Run")
	case kind == "" || h == nil || interval <= 0:
		return fmt.Errorf("reconcile: periodic %q needs a handler and a positive interval", kind)
	case r.handlers[kind] != nil:
		return fmt.Errorf("reconcile: kind %q already has a handler", kind)
	}
	r.handlers[kind] = h
	r.periodic[kind] = interval
	return nil
}

// freeze fixes the handler set on first use; no handler at all is a misconfiguration.
func (r *Runner) freeze() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.started {
		r.started = true
		for kind := range r.handlers {
			r.kinds = append(r.kinds, kind)
		}
		sort.Strings(r.kinds)
	}
	if len(r.kinds) == 0 {
		return errors.New("reconcile: no handlers registered")
	}
	return nil
}

// ensurePeriodic makes sure the singleton rows of the periodic passes exist (once per runner).
func (r *Runner) ensurePeriodic(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ensured {
		return nil
	}
	for kind, interval := range r.periodic {
		err := store.EnsurePeriodic(ctx, r.opts.DB, store.PeriodicParams{Kind: kind, Interval: interval, Now: r.now()})
		if err != nil {
			return fmt.Errorf("reconcile: %w", err)
		}
	}
	r.ensured = true
	return nil
}

// Run claims and runs work until ctx ends, then waits for the handlers in flight: they may
// finish within ShutdownGrace, after which their contexts are cancelled and their items
// released for another replica. It returns nil after a stop by ctx, or an error if the
// runner is misconfigured. Database failures are logged and retried, never fatal. Call Run
// once per Runner.
func (r *Runner) Run(ctx context.Context) error {
	if err := r.freeze(); err != nil {
		return err
	}
	base, stopHandlers := context.WithCancelCause(context.WithoutCancel(ctx))
	defer stopHandlers(nil)

	slots := make(chan struct{}, r.opts.Concurrency)
	for ctx.Err() == nil {
		if err := r.ensurePeriodic(ctx); err != nil {
			r.opts.Logger.Warn("reconcile: declaring periodic passes", "holder", r.opts.Holder, "err", err)
			r.pause(ctx)
			continue
		}
		free := acquireSlots(ctx, slots)
		if free == 0 {
			break // stopping
		}
		leases, err := r.claim(ctx, free)
		for range free - len(leases) {
			<-slots
		}
		for _, l := range leases {
			r.inFlight.Add(1)
			r.started1(l.Kind)
			go func() {
				defer r.inFlight.Done()
				defer func() { <-slots }()
				defer r.finished(l.Kind)
				r.process(base, l)
			}()
		}
		if err != nil {
			if ctx.Err() == nil {
				r.opts.Logger.Warn("reconcile: claim failed", "holder", r.opts.Holder, "err", err)
			}
			r.pause(ctx)
		} else if len(leases) < free {
			r.pause(ctx) // the queue had less than we could take: wait for more to fall due
		}
	}
	grace := time.AfterFunc(max(r.opts.ShutdownGrace, 0), func() { stopHandlers(errStopping) })
	r.inFlight.Wait()
	grace.Stop()
	return nil
}

// RunOnce claims one batch (up to Concurrency items), runs it to the end and reports how many
// items it ran. Tests drive runners with it (see reconciletest.Drain); ctx is the handlers'
// context too.
func (r *Runner) RunOnce(ctx context.Context) (int, error) {
	if err := r.freeze(); err != nil {
		return 0, err
	}
	if err := r.ensurePeriodic(ctx); err != nil {
		return 0, err
	}
	leases, err := r.claim(ctx, r.opts.Concurrency)
	if err != nil {
		return 0, err
	}
	var wg sync.WaitGroup
	for _, l := range leases {
		wg.Add(1)
		r.started1(l.Kind)
		go func() {
			defer wg.Done()
			defer r.finished(l.Kind)
			r.process(ctx, l)
		}()
	}
	wg.Wait()
	return len(leases), nil
}

// claim leases up to n due items of the runner's kinds, each kind within what its share has
// left and each group within its bound.
func (r *Runner) claim(ctx context.Context, n int) ([]store.Lease, error) {
	rooms, groups := r.rooms()
	leases, err := store.Claim(ctx, r.opts.DB, store.ClaimParams{
		Holder: r.opts.Holder, Kinds: r.kinds, Limit: n, LeaseTTL: r.opts.LeaseTTL, Now: r.now(),
		KindLimits: rooms, GroupLimits: groups,
	})
	if err != nil {
		return nil, fmt.Errorf("reconcile: %w", err)
	}
	return leases, nil
}

// share is kind's share with the defaults filled in.
func (r *Runner) share(kind string) Share {
	sh := r.opts.Shares[kind]
	if sh.Slots == 0 {
		sh.Slots = r.opts.Concurrency
		if len(r.kinds) > 1 {
			sh.Slots = max(1, r.opts.Concurrency-1)
		}
	}
	sh.Slots = min(sh.Slots, r.opts.Concurrency)
	return sh
}

// rooms says how many more handlers of each kind may start now, and the group bounds.
func (r *Runner) rooms() (map[string]int, map[string]int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rooms, groups := make(map[string]int, len(r.kinds)), map[string]int{}
	for _, kind := range r.kinds {
		sh := r.share(kind)
		rooms[kind] = sh.Slots - r.running[kind]
		if sh.PerGroup > 0 {
			groups[kind] = sh.PerGroup
		}
	}
	return rooms, groups
}

func (r *Runner) started1(kind string) {
	r.mu.Lock()
	r.running[kind]++
	r.mu.Unlock()
}

func (r *Runner) finished(kind string) {
	r.mu.Lock()
	r.running[kind]--
	r.mu.Unlock()
}

// acquireSlots blocks for one free handler slot, then takes every other free one; 0 means
// ctx ended first.
func acquireSlots(ctx context.Context, slots chan struct{}) int {
	select {
	case slots <- struct{}{}:
	case <-ctx.Done():
		return 0
	}
	n := 1
	for n < cap(slots) {
		select {
		case slots <- struct{}{}:
			n++
		default:
			return n
		}
	}
	return n
}

// pause waits one poll interval or until ctx ends.
func (r *Runner) pause(ctx context.Context) {
	t := time.NewTimer(r.opts.PollInterval)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// now is the injected time, or zero for the database clock.
func (r *Runner) now() time.Time {
	if r.opts.Clock == nil {
		return time.Time{}
	}
	return r.opts.Clock.Now()
}

// localNow is the time used to turn absolute provider times (RetryAtError) into delays.
func (r *Runner) localNow() time.Time {
	if r.opts.Clock == nil {
		return time.Now()
	}
	return r.opts.Clock.Now()
}
