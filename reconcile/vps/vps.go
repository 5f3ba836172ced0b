// Package vps is the vps.provider-resources reconciler: it converges the load balancers,
// instances, subnets and certificates the tenants recorded onto their provider accounts through
// provider.Provider (ProviderImpl).
//
// One Handler serves the work kind contract.VPSKind and dispatches on the resource id's type
// prefix (plb_, inst_, snet_, pcert_) to the kind's managed.Resource; managed.Loop runs the pass.
// Every pass reads the rows, talks to the provider outside any transaction, and writes what it
// learned only through the pass's managed.Fence, so a replica whose lease was taken over writes
// nothing. A pass is idempotent: it observes first, then creates, updates or deletes what
// differs, and asks to come back (Result.RequeueAfter) while the provider works asynchronously.
//
// Creates never duplicate (managed owns the rules): provider-side names are deterministic
// (managed.ProviderName), a load balancer is marked create-pending in a fenced write before the
// provider is asked, and a pass that finds the mark (or, for the other types, any resource of
// that name) adopts what the provider has instead of creating again. The create call itself runs
// under a deadline well inside the lease, so a replica paused between its fenced mark and the
// request cannot send it after its lease was taken over.
package vps

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"better-compute.dev/compute/contract"
	"better-compute.dev/compute/ids"
	"better-compute.dev/compute/observe"
	"better-compute.dev/compute/provider"
	"better-compute.dev/compute/reconcile"
	"better-compute.dev/compute/reconcile/managed"
	"better-compute.dev/compute/seal"
	"better-compute.dev/compute/store"
)

// PeriodicKind is the work kind of the periodic safety net (Periodic).
const PeriodicKind = contract.VPSKind + ".periodic"

// Defaults of Options.
const (
	DefaultProviderPoll     = 2 * time.Second
	DefaultDependencyPoll   = 10 * time.Second
	DefaultCreateWindow     = managed.DefaultCreateWindow
	DefaultImage            = "ubuntu-24-04-x64"
	DefaultPeriodicInterval = time.Minute
	// MaxPeriodicInterval is the longest periodic interval allowed: the seed promises that an
	// instance which gained a machine is added within five minutes.
	MaxPeriodicInterval = 5 * time.Minute
	// periodicBatch bounds the enqueues of one periodic transaction.
	periodicBatch = 100
)

// Options configure a Reconciler.
type Options struct {
	// DB holds the rows and the work queue.
	DB *store.DB
	// Keyring opens the sealed account tokens and certificate keys.
	Keyring *seal.Keyring
	// Factory opens a provider for an account (digitalocean.NewFactory).
	Factory provider.Factory
	// ProviderPoll is how soon a pass comes back while the provider works (a load balancer
	// still new, its address not yet assigned, a certificate being issued). Default 2 s.
	ProviderPoll time.Duration
	// DependencyPoll is how soon a pass comes back while it waits for another resource (a
	// subnet's VPC, a certificate, a target load balancer). Those resources queue their
	// waiters when they become ready; the poll is the backstop. Default 10 s.
	DependencyPoll time.Duration
	// CreateWindow bounds a create request at the provider (managed.Loop.CreateWindow). Keep
	// it well below the lease TTL: a replica paused between its create-pending mark and the
	// request finds the deadline passed when it resumes and sends nothing. Default 10 s.
	CreateWindow time.Duration
	// Image is the image of the droplets made for instances. Default ubuntu-24-04-x64.
	Image string
	// Logger receives what a pass could not record. Default slog.Default().
	Logger *slog.Logger
}

// Reconciler is the vps.provider-resources reconciler; it is safe for concurrent use.
type Reconciler struct {
	opts      Options
	loop      managed.Loop
	providers *managed.Providers

	mu      sync.Mutex
	watches map[string]*lbWatch // by account id
}

// New checks opts and fills in the defaults.
func New(opts Options) (*Reconciler, error) {
	switch {
	case opts.DB == nil:
		return nil, errors.New("vps: Options.DB is required")
	case opts.Keyring == nil:
		return nil, errors.New("vps: Options.Keyring is required")
	case opts.Factory == nil:
		return nil, errors.New("vps: Options.Factory is required")
	}
	if opts.ProviderPoll <= 0 {
		opts.ProviderPoll = DefaultProviderPoll
	}
	if opts.DependencyPoll <= 0 {
		opts.DependencyPoll = DefaultDependencyPoll
	}
	if opts.CreateWindow <= 0 {
		opts.CreateWindow = DefaultCreateWindow
	}
	if opts.Image == "" {
		opts.Image = DefaultImage
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	for _, k := range store.UnqueuedKinds {
		observe.RequeueKinds(string(k))
	}
	// Every fenced write of these kinds decides from the rows it locks (writer.go), so they
	// run as reconcile.WriteLocked.
	return &Reconciler{
		opts:      opts,
		loop:      managed.Loop{DB: opts.DB, CreateWindow: opts.CreateWindow, RowLocked: true},
		providers: managed.NewProviders(opts.DB, opts.Keyring, opts.Factory),
		watches:   map[string]*lbWatch{},
	}, nil
}

// Reconcile implements reconcile.Handler for contract.VPSKind: it dispatches on the id's
// type prefix. An id of an unknown type is a programming error, reported as the item's last
// error.
func (r *Reconciler) Reconcile(ctx context.Context, lease store.Lease) (reconcile.Result, error) {
	id := lease.ResourceID
	switch {
	case strings.HasPrefix(id, ids.LoadBalancer):
		return r.loop.Run(ctx, lease, managed.KindFunc(r.loadLoadBalancer))
	case strings.HasPrefix(id, ids.Instance):
		return r.loop.Run(ctx, lease, managed.KindFunc(r.loadInstance))
	case strings.HasPrefix(id, ids.Subnet):
		return r.loop.Run(ctx, lease, managed.KindFunc(r.loadSubnet))
	case strings.HasPrefix(id, ids.Certificate):
		return r.loop.Run(ctx, lease, managed.KindFunc(r.loadCertificate))
	}
	return reconcile.Result{}, fmt.Errorf("vps: no reconciler for resource %q", id)
}

// Periodic returns the handler of the periodic pass (register it with reconcile.Runner.Every
// under PeriodicKind). It is the safety net, not the way work gets done: the transactions that
// record a change queue the resources it concerns (a request, an instance gaining its machine
// or being deleted, a certificate turning ready), so the pass looks only for what none of them
// recorded, at a cost per provider account rather than per resource:
//
//   - every provider-side resource of any kind (load balancer, certificate, instance, subnet,
//     cluster, node pool) found not resting without a due work item is queued (the work-queue
//     invariant, store/workqueue_unqueued.go), so a lost item is found within one interval;
//   - per account with settled load balancers, one list of its load balancers (the list shared
//     by every replica, lb_poll.go: none is sent when another replica listed moments ago) and
//     one comparison in the database (store.LoadBalancersOutOfStep): a load balancer the list
//     shows otherwise than its last converged pass saw it (changed at the provider by someone
//     else, gone, errored) or whose reach differs from what was last applied (an instance that
//     gained or lost its machine without its trigger) is queued, and no other.
func (r *Reconciler) Periodic() reconcile.Handler {
	return reconcile.HandlerFunc(r.periodic)
}

func (r *Reconciler) periodic(ctx context.Context, lease store.Lease) (reconcile.Result, error) {
	if err := r.requeueUnqueued(ctx, lease); err != nil {
		return reconcile.Result{}, err
	}
	accounts, err := store.AccountsWithSettledLoadBalancers(ctx, r.opts.DB.Q())
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("vps: periodic pass: %w", err)
	}
	var stale []string
	for _, accountID := range accounts {
		ids, err := r.lbsOutOfStep(ctx, accountID)
		if err != nil {
			return reconcile.Result{}, err
		}
		stale = append(stale, ids...)
	}
	slices.Sort(stale) // work items are locked in id order (store/lockorder.go)
	for start := 0; start < len(stale); start += periodicBatch {
		batch := stale[start:min(start+periodicBatch, len(stale))]
		if err := write(ctx, &managed.Fence{DB: r.opts.DB, Lease: lease, RowLocked: true}, func(w *writer) error {
			return w.enqueueAll(batch)
		}); err != nil {
			return reconcile.Result{}, err
		}
	}
	return reconcile.Result{}, nil
}

// periodicListAge is how old the account's recorded list may be for the periodic comparison to
// trust it: a list another replica made within the longest periodic interval still shows drift
// that happened before it; a younger change is seen by the next interval's list.
const periodicListAge = MaxPeriodicInterval

// lbsOutOfStep lists the account's load balancers (or lets the list another replica just made
// answer) and returns the settled ones the comparison finds out of step. An account whose list
// cannot be made now (its token refused, the budget kept for creates) is still compared on the
// database side and on its last recorded list.
func (r *Reconciler) lbsOutOfStep(ctx context.Context, accountID string) ([]string, error) {
	p, err := r.connect(ctx, accountID)
	if err == nil {
		err = r.watchFor(accountID).refresh(ctx, p)
	}
	if err != nil && !errors.Is(err, provider.ErrDeferred) {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		r.opts.Logger.Warn("vps: periodic pass could not list the account's load balancers",
			"account", accountID, "err", err.Error())
	}
	ids, err := store.LoadBalancersOutOfStep(ctx, r.opts.DB.Q(), accountID, listKind, periodicListAge)
	if err != nil {
		return nil, fmt.Errorf("vps: periodic pass: %w", err)
	}
	return ids, nil
}

// requeueUnqueued queues, in batches under the pass's fence, the resources of every kind that
// break the work-queue invariant. Each one is a path that lost an item: it is logged and
// counted (bc_resources_requeued_total), so the path gets found and fixed.
func (r *Reconciler) requeueUnqueued(ctx context.Context, lease store.Lease) error {
	found, err := store.FindAllUnqueued(ctx, r.opts.DB.Q(), contract.WorkKinds, periodicBatch)
	if err != nil {
		return fmt.Errorf("vps: periodic pass: %w", err)
	}
	if len(found) == 0 {
		return nil
	}
	for start := 0; start < len(found); start += periodicBatch {
		batch := found[start:min(start+periodicBatch, len(found))]
		if err := write(ctx, &managed.Fence{DB: r.opts.DB, Lease: lease, RowLocked: true}, func(w *writer) error {
			return store.EnqueueUnqueued(w.ctx, w.tx, batch)
		}); err != nil {
			return err
		}
	}
	for _, u := range found {
		observe.ResourceRequeued(string(u.Kind))
		r.opts.Logger.Warn("vps: periodic pass queued a resource that had no due work item",
			"kind", string(u.Kind), "resource", u.ResourceID, "state", u.State)
	}
	return nil
}

// connect opens (or reuses) the provider of an account.
func (r *Reconciler) connect(ctx context.Context, accountID string) (provider.Provider, error) {
	p, err := r.providers.For(ctx, accountID)
	if err != nil {
		return nil, fmt.Errorf("vps: %w", err)
	}
	return p, nil
}
