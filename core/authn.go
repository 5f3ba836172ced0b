package core

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"fmt"
	"strings"
	"time"

	"better-compute.dev/compute/apierr"
	"better-compute.dev/compute/authz"
	"better-compute.dev/compute/gen/go/bettercompute/compute/v1/errcode"
	"better-compute.dev/compute/ids"
	"better-compute.dev/compute/store"
)

// tokenPrefix marks the platform's bearer secrets so leaked ones are easy to find and revoke.
const tokenPrefix = "bct_"

// HashSecret is how a bearer secret is stored: SHA-256 suffices for 256-bit random secrets.
func HashSecret(secret string) []byte {
	h := sha256.Sum256([]byte(secret))
	return h[:]
}

// NewSecret makes a bearer secret (tokens/create, the platform admin's bootstrap).
func NewSecret() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return tokenPrefix + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b))
}

// Authenticate resolves a bearer secret to its caller.
func (s *Base) Authenticate(ctx context.Context, secret string) (Caller, error) {
	if !strings.HasPrefix(secret, tokenPrefix) || len(secret) > 200 {
		return Caller{}, &apierr.Error{Code: errcode.Unauthenticated, Message: "unknown or expired token"}
	}
	return s.authenticateHash(ctx, HashSecret(secret))
}

// authenticateHash resolves a token by its hash (Authenticate, and watches asking again).
func (s *Base) authenticateHash(ctx context.Context, hash []byte) (Caller, error) {
	key := string(hash)
	s.principals.touch(s.db)
	if c, ok := s.principals.get(key); ok {
		return c, nil
	}
	// Callers of one token that miss together (the open watches of a token, all asking again
	// when its entry expires) share one read.
	// The read does not end with the first caller's context: its answer serves every caller
	// waiting on it (a caller whose context has already ended does not start one). Do, not
	// DoChan, so that a panic reaches the caller's goroutine and its recovery.
	if err := ctx.Err(); err != nil {
		return Caller{}, StoreErr(fmt.Errorf("%w: %w", store.ErrUnavailable, err), "token")
	}
	v, err, _ := s.principals.lookups.Do(key, func() (any, error) {
		c, ok, gen := s.principals.lookup(key)
		if ok {
			return c, nil
		}
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), principalLookupTimeout)
		defer cancel()
		return s.lookupToken(ctx, key, hash, gen)
	})
	if err != nil {
		return Caller{}, err
	}
	return v.(Caller), nil
}

// principalLookupTimeout bounds one shared read of a token.
const principalLookupTimeout = 10 * time.Second

// lookupToken reads a token and its principal and caches the caller, unless the cache forgot its
// entries (generation gen) meanwhile.
func (s *Base) lookupToken(ctx context.Context, key string, hash []byte, gen uint64) (Caller, error) {
	asked := s.principals.clock()
	p, expires, err := store.AuthenticateToken(ctx, s.Store.Q(), hash)
	if err != nil {
		if apierr.CodeOf(StoreErr(err, "token")) == errcode.NotFound {
			return Caller{}, &apierr.Error{Code: errcode.Unauthenticated, Message: "unknown or expired token"}
		}
		return Caller{}, StoreErr(err, "token")
	}
	c := Caller{PrincipalID: p.ID, TenantID: p.TenantID, tokenHash: hash}
	if p.PlatformAdmin {
		// The database names platform principals; OpenFGA decides whether they act as one.
		if c.PlatformAdmin, err = s.platformAdmin(ctx, p.ID); err != nil {
			return Caller{}, err
		}
	}
	s.principals.put(key, c, gen, asked, expires)
	return c, nil
}

// platformAdmin asks OpenFGA whether a principal the database records as a platform principal
// holds compute:platform:manage. The grant is written first (idempotently, once per process), so
// a replica whose in-process engine started after the bootstrap also knows it.
func (s *Base) platformAdmin(ctx context.Context, principalID string) (bool, error) {
	if _, done := s.platformSynced.Load(principalID); !done {
		if err := s.Authz.GrantPlatformAdmin(ctx, principalID); err != nil {
			return false, AuthzErr(err)
		}
		s.platformSynced.Store(principalID, true)
	}
	ok, err := s.Authz.Check(ctx, authz.Check{Principal: principalID, Permission: authz.PlatformManage, Object: authz.PlatformObject})
	if err != nil {
		return false, AuthzErr(err)
	}
	return ok, nil
}

// BootstrapAdmin makes a platform admin principal and a token for it; dev mode prints the secret.
func (s *Base) BootstrapAdmin(ctx context.Context, name string) (principalID, secret string, err error) {
	secret = NewSecret()
	principalID = ids.New(ids.Principal)
	err = s.Store.ExecuteTx(ctx, func(tx store.Tx) error {
		if _, err := store.InsertPrincipal(ctx, tx, store.Principal{ID: principalID, Kind: "serviceAccount", DisplayName: name, PlatformAdmin: true}); err != nil {
			return err
		}
		_, err := store.InsertToken(ctx, tx, store.Token{ID: ids.New(ids.Token), PrincipalID: principalID, SecretHash: HashSecret(secret)})
		return err
	})
	if err == nil && s.Authz != nil {
		if err = s.Authz.GrantPlatformAdmin(ctx, principalID); err == nil {
			s.platformSynced.Store(principalID, true)
		}
	}
	return principalID, secret, err
}

// Reauthenticate asks again whether the token c authenticated with still stands (a long call, a
// watch, between its polls): a revoked token is UNAUTHENTICATED. The answer comes from the
// principal cache most of the time. A caller made without a token (tests, the admin context) is
// returned as it is.
func (s *Base) Reauthenticate(ctx context.Context, c Caller) (Caller, error) {
	if c.tokenHash == nil {
		return c, nil
	}
	return s.authenticateHash(ctx, c.tokenHash)
}

// ForgetPrincipals forgets every cached caller, so that a revocation takes effect at once on this
// replica (the others follow the credential version within PrincipalCacheTTL).
func (s *Base) ForgetPrincipals() { s.principals.reset() }
