package vps

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"better-compute.dev/compute/core"
	"better-compute.dev/compute/provider"
	"better-compute.dev/compute/store"
)

// Polling many load balancers costs one list request per page (up to 200 load balancers)
// instead of one get each. Each replica keeps, per provider account, the last list it read (a
// snapshot); a pass that must observe a load balancer answers from a snapshot younger than
// ProviderPoll that began after the row was last written, and lists anew otherwise (one list
// at a time, shared by the passes that wait for it). Lists are low-priority requests: while
// creates wait for the request budget they are deferred, and the pass parks.
//
// A parked load balancer (one still being built at the provider, or whose poll was deferred)
// comes back only after a long backstop; meanwhile the account's watcher lists every
// ProviderPoll while anything is parked, and queues each parked load balancer the moment the
// list shows it ready to move on (active with an address, or errored), so its next pass
// answers from that same list.

// lbWatch is one account's snapshot and parked load balancers in this replica.
type lbWatch struct {
	r         *Reconciler
	accountID string

	mu      sync.Mutex
	snap    map[string]*provider.LoadBalancer // by provider id
	snapAt  time.Time                         // when the list that made snap began
	lastTry time.Time                         // when a list was last begun
	listing chan struct{}                     // closed when the list in flight ends
	parked  map[string]parkedLB               // by row id
	running bool                              // the watcher goroutine is on
}

type parkedLB struct {
	providerID string
	since      time.Time // a list must begin after this to speak for it
	until      time.Time // the backstop: the pass comes back by itself then
}

// watchFor returns the account's watch, making it on first use.
func (r *Reconciler) watchFor(accountID string) *lbWatch {
	r.mu.Lock()
	defer r.mu.Unlock()
	w := r.watches[accountID]
	if w == nil {
		w = &lbWatch{r: r, accountID: accountID, parked: map[string]parkedLB{}}
		r.watches[accountID] = w
	}
	return w
}

// parkBackstop is how long a parked load balancer's pass waits when nothing wakes it.
func (r *Reconciler) parkBackstop() time.Duration {
	return max(r.opts.DependencyPoll, 4*r.opts.ProviderPoll)
}

// pollLB observes a recorded load balancer from a snapshot, listing when none speaks for it.
// It returns provider.ErrDeferred when the list was deferred (the budget is short) or one was
// begun too recently to begin another.
func (r *Reconciler) pollLB(ctx context.Context, p provider.Provider, row store.LoadBalancer) (*provider.LoadBalancer, error) {
	w := r.watchFor(row.AccountID)
	for range 2 {
		obs, usable := w.lookup(row.ProviderID, row.UpdatedAt)
		if usable {
			if obs != nil {
				return obs, nil
			}
			// Missing from a list that began after the row was written: gone at the provider,
			// or so it seems. A get confirms before the reconciler forgets it.
			return p.LoadBalancers().Get(ctx, row.ProviderID)
		}
		if err := w.refresh(ctx, p); err != nil {
			return nil, err
		}
	}
	return nil, fmt.Errorf("vps: no list speaks for load balancer %s yet: %w", row.ID, provider.ErrDeferred)
}

// lookup answers from the snapshot when it is fresh and began after notBefore; obs is nil when
// the load balancer is not in it.
func (w *lbWatch) lookup(providerID string, notBefore time.Time) (obs *provider.LoadBalancer, usable bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.snap == nil || !w.snapAt.After(notBefore) || time.Since(w.snapAt) >= w.r.opts.ProviderPoll {
		return nil, false
	}
	return w.snap[providerID], true
}

// refresh lists the account's load balancers into the snapshot, or waits for the list in
// flight. A list is begun at most once a ProviderPoll; a pass that finds none fresh parks.
func (w *lbWatch) refresh(ctx context.Context, p provider.Provider) error {
	w.mu.Lock()
	if ch := w.listing; ch != nil {
		w.mu.Unlock()
		select {
		case <-ch:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if time.Since(w.lastTry) < w.r.opts.ProviderPoll {
		w.mu.Unlock()
		return fmt.Errorf("vps: a list of account %s was begun moments ago: %w", w.accountID, provider.ErrDeferred)
	}
	began := time.Now()
	w.lastTry = began
	done := make(chan struct{})
	w.listing = done
	w.mu.Unlock()

	lbs, err := p.LoadBalancers().List(provider.WithLowPriority(ctx))

	w.mu.Lock()
	if err == nil {
		w.snap = make(map[string]*provider.LoadBalancer, len(lbs))
		for _, lb := range lbs {
			w.snap[lb.ID] = lb
		}
		w.snapAt = began
	}
	w.listing = nil
	close(done)
	w.mu.Unlock()
	return err
}

// park records that row waits on the provider and makes sure the watcher runs.
func (r *Reconciler) park(p provider.Provider, row store.LoadBalancer, providerID string) {
	w := r.watchFor(row.AccountID)
	now := time.Now()
	w.mu.Lock()
	w.parked[row.ID] = parkedLB{providerID: providerID, since: now, until: now.Add(r.parkBackstop())}
	start := !w.running
	w.running = true
	w.mu.Unlock()
	if start {
		go w.watch(p)
	}
}

// watch lists every ProviderPoll while anything is parked and wakes what moved on. It ends
// by itself once nothing is parked (every entry lapses at its backstop).
func (w *lbWatch) watch(p provider.Provider) {
	poll := w.r.opts.ProviderPoll
	for {
		time.Sleep(poll)
		now := time.Now()
		w.mu.Lock()
		for id, pk := range w.parked {
			if now.After(pk.until) {
				delete(w.parked, id)
			}
		}
		if len(w.parked) == 0 {
			w.running = false
			w.mu.Unlock()
			return
		}
		w.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), w.r.opts.CreateWindow)
		err := w.refresh(ctx, p)
		if err == nil {
			err = w.wake(ctx)
		}
		cancel()
		if err != nil && !errors.Is(err, provider.ErrDeferred) {
			w.r.opts.Logger.Warn("vps: load balancer watch", "account", w.accountID, "err", err.Error())
		}
	}
}

// wake queues the parked load balancers the snapshot shows ready to move on.
func (w *lbWatch) wake(ctx context.Context) error {
	var ids []string
	w.mu.Lock()
	for id, pk := range w.parked {
		if !w.snapAt.After(pk.since) {
			continue
		}
		lb := w.snap[pk.providerID]
		if lb == nil || lb.Status == provider.LoadBalancerErrored || (lb.Status == provider.LoadBalancerActive && lb.Address != "") {
			ids = append(ids, id)
			delete(w.parked, id)
		}
	}
	w.mu.Unlock()
	if len(ids) == 0 {
		return nil
	}
	return store.ExecuteTx(ctx, w.r.opts.DB, func(tx pgx.Tx) error {
		for _, id := range ids {
			if err := store.Enqueue(ctx, tx, core.ReconcileKind, id, nil); err != nil {
				return err
			}
		}
		return nil
	})
}
