package managed

import (
	"context"
	"crypto/sha256"
	"fmt"
	"sync"

	"better-compute.dev/compute/provider"
	"better-compute.dev/compute/seal"
	"better-compute.dev/compute/store"
)

// Providers opens the provider of an account once and reuses it while the account's sealed
// token stays the same: a new token (the account's row changed) opens a new one. It is safe for
// concurrent use.
type Providers struct {
	db      *store.DB
	keyring *seal.Keyring
	factory provider.Factory

	mu     sync.Mutex
	byAcct map[string]cachedProvider
}

// cachedProvider is an opened provider and the digest of the sealed token it was opened with.
type cachedProvider struct {
	tokenDigest [sha256.Size]byte
	p           provider.Provider
}

// NewProviders returns an empty cache opening accounts of db with factory, their tokens
// unsealed with keyring.
func NewProviders(db *store.DB, keyring *seal.Keyring, factory provider.Factory) *Providers {
	return &Providers{db: db, keyring: keyring, factory: factory, byAcct: map[string]cachedProvider{}}
}

// For opens (or reuses) the provider of an account, unsealing its token.
func (c *Providers) For(ctx context.Context, accountID string) (provider.Provider, error) {
	acct, err := store.GetAccount(ctx, c.db.Q(), accountID)
	if err != nil {
		return nil, fmt.Errorf("account %s: %w", accountID, err)
	}
	return c.Open(ctx, acct)
}

// Open is For with the account's row already read (by a pass that read it with its own row).
func (c *Providers) Open(ctx context.Context, acct store.Account) (provider.Provider, error) {
	accountID := acct.ID
	digest := sha256.Sum256(acct.TokenSealed)
	c.mu.Lock()
	cached, ok := c.byAcct[accountID]
	c.mu.Unlock()
	if ok && cached.tokenDigest == digest {
		return cached.p, nil
	}
	token, err := c.keyring.OpenSecret(string(acct.TokenSealed), []byte(acct.ID))
	if err != nil {
		// The keyring's error names no secret; the token itself is never in an error.
		return nil, fmt.Errorf("account %s: open token: %w", accountID, err)
	}
	p, err := c.factory(ctx, provider.Account{ID: acct.ID, Kind: acct.Kind, Token: token.Reveal(), Endpoint: acct.APIURL})
	if err != nil {
		return nil, fmt.Errorf("account %s: %w", accountID, err)
	}
	c.mu.Lock()
	c.byAcct[accountID] = cachedProvider{tokenDigest: digest, p: p}
	c.mu.Unlock()
	return p, nil
}

// Kubernetes opens the account's managed-Kubernetes client; a provider that offers none is
// provider.ErrInvalid.
func (c *Providers) Kubernetes(ctx context.Context, accountID string) (provider.Clusters, error) {
	p, err := c.For(ctx, accountID)
	if err != nil {
		return nil, err
	}
	kp, ok := p.(provider.KubernetesProvider)
	if !ok {
		return nil, fmt.Errorf("account %s: provider offers no managed Kubernetes: %w", accountID, provider.ErrInvalid)
	}
	return kp.Clusters(), nil
}
