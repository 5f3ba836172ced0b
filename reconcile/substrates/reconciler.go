// Package substrates is the kubernetes.substrates reconciler: it converges the managed
// Kubernetes cluster behind a pool whose policy has a substrate.
//
// The work item's resource id is the pool id; core queues it whenever the pool is created
// with a substrate, its policy changes, it is archived, or a node joins. A pass reads the pool
// and its substrate row, talks to the provider (provider.Clusters) and to the cluster
// (server-side apply through its k8sapply package) outside any transaction, and records what it
// learned through reconcile.WriteResult, so a replica whose lease was taken over writes
// nothing.
//
// The cluster is a managed.Resource and managed.Loop runs the pass, as for every other kind
// kept at a provider. Create: the cluster is named bc-<pool id> (managed.ProviderName, the
// adoption key), made with one node pool per flavor (bc-<pool>-<flavor>) after a durable
// create-pending mark, within the create window measured from before the mark (refused once
// it has passed), and found by name instead of made again after a lost create. Adopt: the flavors' node pools are added to the tenant's
// cluster and the tenant's own node pools are never touched. Then the pool's Namespace, the
// Secret holding the hosted join token and bcd's DaemonSet are applied, each labelled
// better-compute.dev/substrate-pool=<pool id>; an object of the same name we did not create is
// reported on the substrate and never taken over or deleted. Teardown (archive, a policy
// without a substrate, or one naming another cluster) deletes what we created: our node pools
// and objects, and the cluster only when we made it.
package substrates

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"better-compute.dev/compute/contract"
	"better-compute.dev/compute/provider"
	"better-compute.dev/compute/reconcile"
	"better-compute.dev/compute/reconcile/managed"
	"better-compute.dev/compute/seal"
	"better-compute.dev/compute/store"
)

// Kind is the work-queue kind this reconciler serves (register it with reconcile.Options.Handlers).
const Kind = contract.SubstrateKind

// Defaults of Options.
const (
	DefaultProviderPoll = 5 * time.Second
	DefaultResync       = 5 * time.Minute
	DefaultCreateWindow = managed.DefaultCreateWindow
	DefaultBcdImage     = "ghcr.io/better-compute/bcd:latest"
)

// Options configure the reconciler.
type Options struct {
	// DB holds the pools, substrates and the work queue.
	DB *store.DB
	// Keyring opens the sealed account tokens and join tokens.
	Keyring *seal.Keyring
	// Factory opens a provider for an account (digitalocean.NewFactory); the provider must also
	// implement provider.KubernetesProvider.
	Factory provider.Factory
	// Kube turns a cluster's kubeconfig into a Kubernetes client. Default KubeconfigClients{}.
	Kube KubeClients
	// JoinURL is the control plane's base URL bcd calls SubstrateJoinService.JoinNode at; it
	// goes into the join Secret.
	JoinURL string
	// BcdImage is bcd's container image. Default DefaultBcdImage.
	BcdImage string
	// ProviderPoll is how soon a pass comes back while the cluster provisions. Default 5 s.
	ProviderPoll time.Duration
	// Resync is how soon a pass comes back after converging (drift repair, node pruning) or
	// after recording a terminal error. Default 5 min.
	Resync time.Duration
	// CreateWindow bounds the cluster create request, measured from before the create-pending
	// mark (managed.Loop.CreateWindow); keep it well below the lease TTL. Default 10 s.
	CreateWindow time.Duration
	// Logger receives what a pass could not record. Default slog.Default().
	Logger *slog.Logger
}

// Reconciler is the kubernetes.substrates reconciler; it is safe for concurrent use.
type Reconciler struct {
	opts      Options
	loop      managed.Loop
	providers *managed.Providers
}

var _ reconcile.Handler = (*Reconciler)(nil)

// New checks opts, fills in the defaults and returns the handler of Kind.
func New(opts Options) (*Reconciler, error) {
	switch {
	case opts.DB == nil:
		return nil, errors.New("substrates: Options.DB is required")
	case opts.Keyring == nil:
		return nil, errors.New("substrates: Options.Keyring is required")
	case opts.Factory == nil:
		return nil, errors.New("substrates: Options.Factory is required")
	}
	if opts.Kube == nil {
		opts.Kube = KubeconfigClients{}
	}
	if opts.BcdImage == "" {
		opts.BcdImage = DefaultBcdImage
	}
	if opts.ProviderPoll <= 0 {
		opts.ProviderPoll = DefaultProviderPoll
	}
	if opts.Resync <= 0 {
		opts.Resync = DefaultResync
	}
	if opts.CreateWindow <= 0 {
		opts.CreateWindow = DefaultCreateWindow
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &Reconciler{
		opts:      opts,
		loop:      managed.Loop{DB: opts.DB, CreateWindow: opts.CreateWindow},
		providers: managed.NewProviders(opts.DB, opts.Keyring, opts.Factory),
	}, nil
}

// Reconcile implements reconcile.Handler: one pass over the substrate of the pool the lease
// names.
func (r *Reconciler) Reconcile(ctx context.Context, lease store.Lease) (reconcile.Result, error) {
	return r.loop.Run(ctx, lease, managed.KindFunc(r.load))
}

// load reads the pool and its substrate. A substrate whose recorded account, mode or cluster
// is not what the policy asks for (or that no policy wants) is torn down first: the pass
// records it deleting before it talks to the provider.
func (r *Reconciler) load(ctx context.Context, f *managed.Fence) (managed.Resource, error) {
	q := r.opts.DB.Q()
	pool, err := store.GetPool(ctx, q, f.Lease.ResourceID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("substrates: pool %s: %w", f.Lease.ResourceID, err)
	}
	sub, err := store.GetSubstrateByPool(ctx, q, pool.ID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil // the pool never had a substrate
	}
	if err != nil {
		return nil, fmt.Errorf("substrates: substrate of %s: %w", pool.ID, err)
	}
	want, err := desiredOf(pool)
	if err != nil {
		return nil, err
	}
	p := &pass{r: r, f: f, pool: pool, sub: sub, want: want, saved: sub}
	switch {
	case want == nil && sub.State == "deleted":
		return nil, nil
	case want == nil || !p.actsOnWanted():
		p.tearing = true
		if p.sub.State != "deleting" {
			p.sub.State = "deleting"
			if err := p.save(ctx, nil); err != nil {
				return nil, err
			}
		}
	}
	return p, nil
}
