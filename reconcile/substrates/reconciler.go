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
// Create: the cluster is named bc-<pool id> (the adoption key), made with one node pool per
// flavor (bc-<pool>-<flavor>) after a durable create-pending mark, and found by name instead of
// made again after a lost create. Adopt: the flavors' node pools are added to the tenant's
// cluster and the tenant's own node pools are never touched. Then the pool's Namespace, the
// Secret holding the hosted join token and bcd's DaemonSet are applied, each labelled
// better-compute.dev/substrate-pool=<pool id>; an object of the same name we did not create is
// reported on the substrate and never taken over or deleted. Teardown (archive, a policy
// without a substrate, or one naming another cluster) deletes what we created: our node pools
// and objects, and the cluster only when we made it.
package substrates

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"better-compute.dev/compute/core"
	"better-compute.dev/compute/provider"
	"better-compute.dev/compute/reconcile"
	"better-compute.dev/compute/seal"
	"better-compute.dev/compute/store"
)

// Kind is the work-queue kind this reconciler serves (register it with reconcile.Options.Handlers).
const Kind = core.SubstrateKind

// Defaults of Options.
const (
	DefaultProviderPoll = 5 * time.Second
	DefaultResync       = 5 * time.Minute
	DefaultCreateWindow = 10 * time.Second
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
	// CreateWindow bounds the cluster create request; keep it well below the lease TTL (see
	// vps for why). Default 10 s.
	CreateWindow time.Duration
	// Logger receives what a pass could not record. Default slog.Default().
	Logger *slog.Logger
}

// Reconciler is the kubernetes.substrates reconciler; it is safe for concurrent use.
type Reconciler struct {
	opts Options

	mu        sync.Mutex
	providers map[string]cachedProvider
}

type cachedProvider struct {
	tokenDigest [sha256.Size]byte
	clusters    provider.Clusters
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
	return &Reconciler{opts: opts, providers: map[string]cachedProvider{}}, nil
}

// Reconcile implements reconcile.Handler: one pass over the substrate of the pool the lease
// names.
func (r *Reconciler) Reconcile(ctx context.Context, lease store.Lease) (reconcile.Result, error) {
	q := r.opts.DB.Q()
	pool, err := store.GetPool(ctx, q, lease.ResourceID)
	if errors.Is(err, store.ErrNotFound) {
		return reconcile.Result{}, nil
	}
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("substrates: pool %s: %w", lease.ResourceID, err)
	}
	sub, err := store.GetSubstrateByPool(ctx, q, pool.ID)
	if errors.Is(err, store.ErrNotFound) {
		return reconcile.Result{}, nil // the pool never had a substrate
	}
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("substrates: substrate of %s: %w", pool.ID, err)
	}
	want, err := desiredOf(pool)
	if err != nil {
		return reconcile.Result{}, err
	}
	p := &pass{r: r, lease: lease, pool: pool, sub: sub, want: want, saved: sub}
	switch {
	case want == nil && sub.State == "deleted":
		return reconcile.Result{}, nil
	case want == nil || !p.actsOnWanted():
		return p.teardown(ctx)
	}
	return p.setup(ctx)
}

// clustersFor opens (or reuses) the managed-Kubernetes client of an account.
func (r *Reconciler) clustersFor(ctx context.Context, accountID string) (provider.Clusters, error) {
	acct, err := store.GetAccount(ctx, r.opts.DB.Q(), accountID)
	if err != nil {
		return nil, fmt.Errorf("substrates: account %s: %w", accountID, err)
	}
	digest := sha256.Sum256(acct.TokenSealed)
	r.mu.Lock()
	c, ok := r.providers[accountID]
	r.mu.Unlock()
	if ok && c.tokenDigest == digest {
		return c.clusters, nil
	}
	token, err := r.opts.Keyring.OpenSecret(string(acct.TokenSealed), []byte(acct.ID))
	if err != nil {
		return nil, fmt.Errorf("substrates: account %s: open token: %w", accountID, err)
	}
	p, err := r.opts.Factory(ctx, provider.Account{ID: acct.ID, Kind: acct.Kind, Token: token.Reveal(), Endpoint: acct.APIURL})
	if err != nil {
		return nil, fmt.Errorf("substrates: account %s: %w", accountID, err)
	}
	kp, ok := p.(provider.KubernetesProvider)
	if !ok {
		return nil, fmt.Errorf("substrates: account %s: provider %s offers no managed Kubernetes: %w", accountID, acct.Kind, provider.ErrInvalid)
	}
	r.mu.Lock()
	r.providers[accountID] = cachedProvider{tokenDigest: digest, clusters: kp.Clusters()}
	r.mu.Unlock()
	return kp.Clusters(), nil
}
