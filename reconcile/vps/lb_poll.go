package vps

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"better-compute.dev/compute/contract"
	"better-compute.dev/compute/provider"
	"better-compute.dev/compute/store"
)

// Polling many load balancers costs one list request per page (up to 200 load balancers)
// instead of one get each, and one list serves every replica: the right to list an account is
// claimed in the database (provider_lists) at most once a ProviderPoll (half of one while the
// budget is idle and a load balancer is being built: listInterval), and the replica that
// lists records what it showed (provider_observations, only the rows that changed). A pass that
// must observe a load balancer answers from the last recorded list when it began after the row
// was last written and is younger than listFresh (this replica's own last list first, without
// a round trip), and claims a list otherwise. Lists are low-priority requests: while creates
// wait for the request budget they are deferred, and the pass parks.
//
// A parked load balancer (one still being built at the provider, or whose poll was deferred)
// comes back only after a long backstop; meanwhile the account's watcher in the replica that
// parked it claims a list every interval while anything is parked (at most one replica
// wins each interval) and reads the recorded list, queueing each parked load balancer the list
// shows ready to move on (active with an address, errored, or gone), so its next pass, on any
// replica, answers from that same list.

// listKind names the load balancer lists in provider_lists.
const listKind = "load_balancers"

// lbWatch is one account's parked load balancers in this replica and the last list it made.
type lbWatch struct {
	r         *Reconciler
	accountID string

	mu        sync.Mutex
	snap      map[string]*provider.LoadBalancer // by provider id: the last list this replica made
	snapBegan time.Time                         // when it began (database clock)
	snapAt    time.Time                         // when it began (this replica's clock)
	listing   chan struct{}                     // closed when the list in flight ends
	parked    map[string]time.Time              // row id -> backstop: the pass comes back by itself then
	running   bool                              // the watcher goroutine is on
	pace      time.Duration                     // the interval the last list here recorded (listInterval)
}

// watchFor returns the account's watch, making it on first use.
func (r *Reconciler) watchFor(accountID string) *lbWatch {
	r.mu.Lock()
	defer r.mu.Unlock()
	w := r.watches[accountID]
	if w == nil {
		w = &lbWatch{r: r, accountID: accountID, parked: map[string]time.Time{}}
		r.watches[accountID] = w
	}
	return w
}

// parkBackstop is how long a parked load balancer's pass waits when nothing wakes it.
func (r *Reconciler) parkBackstop() time.Duration {
	return max(r.opts.DependencyPoll, 4*r.opts.ProviderPoll)
}

// listFresh is how old a recorded list may be and still answer a pass.
func (r *Reconciler) listFresh() time.Duration {
	return 4 * r.opts.ProviderPoll
}

// pollLB observes a recorded load balancer from a list, claiming one when none speaks for it.
// It returns provider.ErrDeferred when the list was deferred (the budget is short) or another
// replica lists in this interval.
func (r *Reconciler) pollLB(ctx context.Context, p provider.Provider, row store.LoadBalancer) (*provider.LoadBalancer, error) {
	w := r.watchFor(row.AccountID)
	for range 2 {
		obs, usable, err := w.lookup(ctx, row)
		if err != nil {
			return nil, err
		}
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

// lookup answers from this replica's last list, else from the last recorded one, when it is
// fresh and began after the row was last written; obs is nil when the list did not show it.
func (w *lbWatch) lookup(ctx context.Context, row store.LoadBalancer) (obs *provider.LoadBalancer, usable bool, err error) {
	fresh := w.r.listFresh()
	w.mu.Lock()
	if w.snap != nil && w.snapBegan.After(row.UpdatedAt) && time.Since(w.snapAt) < fresh {
		obs = w.snap[row.ProviderID]
		w.mu.Unlock()
		return obs, true, nil
	}
	w.mu.Unlock()
	o, err := store.ProviderObservation(ctx, w.r.opts.DB, w.accountID, listKind, row.ProviderID)
	if err != nil {
		return nil, false, fmt.Errorf("vps: %w", err)
	}
	if !o.Began.After(row.UpdatedAt) || o.Age >= fresh {
		return nil, false, nil
	}
	if o.Body == nil {
		return nil, true, nil
	}
	obs, err = decodeListed(o.Body)
	return obs, err == nil, err
}

// canonical puts the lists of a listed load balancer in a fixed order, so that a provider
// answering the same state in another order records the same body and digest (the periodic
// comparison would otherwise queue the load balancer for nothing).
func canonical(lb *provider.LoadBalancer) {
	for _, ids := range [][]string{lb.MachineIDs, lb.TargetLoadBalancerIDs, lb.Spec.MachineIDs, lb.Spec.TargetLoadBalancerIDs,
		lb.Spec.AllowSources, lb.Spec.DenySources} {
		slices.Sort(ids)
	}
	slices.SortFunc(lb.Spec.Forwarding, func(a, b provider.ForwardingRule) int {
		if a.EntryPort != b.EntryPort {
			return a.EntryPort - b.EntryPort
		}
		return strings.Compare(a.EntryProtocol, b.EntryProtocol)
	})
	slices.SortFunc(lb.Spec.Domains, func(a, b provider.Domain) int { return strings.Compare(a.Name, b.Name) })
}

// listedDigest is the digest a recorded list keeps of lb (store.RecordProviderList: the SHA-256
// of its encoding here); nil when it cannot be encoded, which no list records.
func listedDigest(lb *provider.LoadBalancer) []byte {
	body, err := json.Marshal(lb)
	if err != nil {
		return nil
	}
	sum := sha256.Sum256(body)
	return sum[:]
}

func decodeListed(body []byte) (*provider.LoadBalancer, error) {
	var lb provider.LoadBalancer
	if err := json.Unmarshal(body, &lb); err != nil {
		return nil, fmt.Errorf("vps: a recorded load balancer list row: %w", err)
	}
	return &lb, nil
}

// refresh claims and makes a list of the account's load balancers, or waits for the one this
// replica has in flight. It returns provider.ErrDeferred when another replica holds the claim
// (it listed within the interval, or lists now) or the budget is kept for creates.
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
	done := make(chan struct{})
	w.listing = done
	w.mu.Unlock()

	err := w.list(ctx, p)

	w.mu.Lock()
	w.listing = nil
	close(done)
	w.mu.Unlock()
	return err
}

// list makes one claimed list and records it for every replica.
func (w *lbWatch) list(ctx context.Context, p provider.Provider) error {
	db := w.r.opts.DB
	began, claimed, err := store.ClaimProviderList(ctx, db, w.accountID, listKind, w.r.opts.CreateWindow)
	if err != nil {
		return fmt.Errorf("vps: %w", err)
	}
	if !claimed {
		return fmt.Errorf("vps: account %s was listed moments ago or is being listed: %w", w.accountID, provider.ErrDeferred)
	}
	at := time.Now()
	var grant provider.PollGrant
	lbs, err := p.LoadBalancers().List(provider.WithPollGrant(provider.WithLowPriority(ctx), &grant))
	if err != nil {
		// Let another claim be taken after a poll interval; the claim lapses by itself otherwise.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		_ = store.ReleaseProviderList(rctx, db, w.accountID, listKind, began, w.r.opts.ProviderPoll)
		cancel()
		return err
	}
	snap := make(map[string]*provider.LoadBalancer, len(lbs))
	items := make([]store.Listed, 0, len(lbs))
	for _, lb := range lbs {
		canonical(lb)
		body, err := json.Marshal(lb)
		if err != nil {
			return fmt.Errorf("vps: encode listed load balancer: %w", err)
		}
		snap[lb.ID] = lb
		items = append(items, store.Listed{ProviderID: lb.ID, Body: body})
	}
	interval := w.r.listInterval(grant, lbs)
	w.mu.Lock()
	if began.After(w.snapBegan) {
		w.snap, w.snapBegan, w.snapAt = snap, began, at
	}
	w.pace = interval
	w.mu.Unlock()
	if _, err := store.RecordProviderList(ctx, db, w.accountID, listKind, began, interval, items); err != nil {
		return fmt.Errorf("vps: %w", err)
	}
	return w.wakeListed(ctx, began, lbs)
}

// listInterval is how soon the account may be listed again after a list that showed lbs: a
// ProviderPoll, or half of one while the budget has room to spare (the list went out without
// the polls' credit, so no request waited for the budget) and a listed load balancer is still
// being built. Then the last load balancers of a wave of creates are seen ready within half a
// poll of the provider finishing them instead of a whole one, for a few lists more per wave
// taken from a budget nobody else wanted.
func (r *Reconciler) listInterval(grant provider.PollGrant, lbs []*provider.LoadBalancer) time.Duration {
	if !grant.Spare {
		return r.opts.ProviderPoll
	}
	for _, lb := range lbs {
		if lb.Status == provider.LoadBalancerNew {
			return r.opts.ProviderPoll / 2
		}
	}
	return r.opts.ProviderPoll
}

// wakeListed queues the rows, parked in any replica, that wait on a load balancer the list shows
// ready to move on (active with an address, or errored), so no replica waits for its own
// watcher to read the list.
func (w *lbWatch) wakeListed(ctx context.Context, began time.Time, lbs []*provider.LoadBalancer) error {
	var moved []string
	for _, lb := range lbs {
		if movedOn(lb) {
			moved = append(moved, lb.ID)
		}
	}
	if len(moved) == 0 {
		return nil
	}
	waiting, err := store.LoadBalancersWaitingOn(ctx, w.r.opts.DB, w.accountID, moved, began)
	if err != nil {
		return fmt.Errorf("vps: %w", err)
	}
	ids := make([]string, 0, len(waiting))
	due := make([]time.Time, 0, len(waiting))
	for _, row := range waiting {
		ids, due = append(ids, row.ID), append(due, row.CreatedAt)
	}
	return w.enqueue(ctx, ids, due)
}

// movedOn reports whether a listed load balancer lets a pass waiting on it move on.
func movedOn(lb *provider.LoadBalancer) bool {
	return lb.Status == provider.LoadBalancerErrored || (lb.Status == provider.LoadBalancerActive && lb.Address != "")
}

// park records that row waits on the provider and makes sure the watcher runs.
func (r *Reconciler) park(p provider.Provider, row store.LoadBalancer) {
	w := r.watchFor(row.AccountID)
	w.mu.Lock()
	w.parked[row.ID] = time.Now().Add(r.parkBackstop())
	start := !w.running
	w.running = true
	w.mu.Unlock()
	if start {
		go w.watch(p)
	}
}

// watch lists (when its claim wins) every interval (listInterval of its last list, else a
// ProviderPoll) while anything is parked and wakes what
// the last recorded list shows moved on. It ends by itself once nothing is parked (every entry
// lapses at its backstop).
func (w *lbWatch) watch(p provider.Provider) {
	for {
		w.mu.Lock()
		pace := w.pace
		w.mu.Unlock()
		if pace <= 0 {
			pace = w.r.opts.ProviderPoll
		}
		time.Sleep(pace)
		now := time.Now()
		w.mu.Lock()
		for id, until := range w.parked {
			if now.After(until) {
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
		if errors.Is(err, provider.ErrDeferred) {
			err = nil
		}
		err = errors.Join(err, w.wake(ctx))
		cancel()
		if err != nil {
			w.r.opts.Logger.Warn("vps: load balancer watch", "account", w.accountID, "err", err.Error())
		}
	}
}

// wake queues the parked load balancers the last recorded list shows ready to move on.
func (w *lbWatch) wake(ctx context.Context) error {
	w.mu.Lock()
	rowIDs := make([]string, 0, len(w.parked))
	for id := range w.parked {
		rowIDs = append(rowIDs, id)
	}
	w.mu.Unlock()
	listed, err := store.ListedLoadBalancers(ctx, w.r.opts.DB, w.accountID, listKind, rowIDs)
	if err != nil {
		return fmt.Errorf("vps: %w", err)
	}
	var ids []string
	var due []time.Time
	for _, l := range listed {
		if !l.Speaks {
			continue
		}
		if l.Body != nil {
			lb, err := decodeListed(l.Body)
			if err != nil {
				return err
			}
			if !movedOn(lb) {
				continue
			}
		}
		ids, due = append(ids, l.ID), append(due, l.CreatedAt)
	}
	return w.enqueue(ctx, ids, due)
}

// enqueue queues the woken rows and stops watching them here.
func (w *lbWatch) enqueue(ctx context.Context, ids []string, due []time.Time) error {
	if len(ids) == 0 {
		return nil
	}
	// A woken load balancer is due from when it was recorded: its pass needs no provider
	// request (the list answers it), and it must not wait behind the creates of load
	// balancers recorded after it, which the request budget holds back. The upserts are blind
	// writes, so store.ExecuteLockedTx (READ COMMITTED on PostgreSQL) runs them.
	if err := store.ExecuteLockedTx(ctx, w.r.opts.DB, func(tx store.Tx) error {
		return store.EnqueueMany(ctx, tx, contract.VPSKind, ids, due)
	}); err != nil {
		return err
	}
	w.mu.Lock()
	for _, id := range ids {
		delete(w.parked, id)
	}
	w.mu.Unlock()
	return nil
}
