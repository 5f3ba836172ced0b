package core

import (
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
)

// PrincipalCacheTTL bounds how stale an authenticated caller may be: a replica answers a bearer
// token from memory for at most this long after it last read the token and its principal from
// the database. A revoked or expired token, or a deleted principal, is therefore refused by every
// replica at most PrincipalCacheTTL after the change committed (README "Caching"). Roles are not
// cached here: OpenFGA decides them on every call.
const PrincipalCacheTTL = time.Second

// maxCachedPrincipals bounds the cache's memory; when full it starts over (a cold cache costs
// one read per token, never a wrong answer).
const maxCachedPrincipals = 10000

// principalCache remembers recently authenticated tokens (by the SHA-256 of the secret, never
// the secret). Only successes are kept: a token minted a moment ago works at once on every
// replica, and a wrong one is read every time.
type principalCache struct {
	// lookups collapses concurrent reads of one token.
	lookups singleflight.Group

	mu      sync.Mutex
	entries map[string]cachedCaller
	now     func() time.Time
}

type cachedCaller struct {
	caller  Caller
	expires time.Time
}

func (pc *principalCache) get(hash string) (Caller, bool) {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	e, ok := pc.entries[hash]
	if !ok || !pc.clock().Before(e.expires) {
		return Caller{}, false
	}
	return e.caller, true
}

func (pc *principalCache) put(hash string, c Caller) {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if pc.entries == nil || len(pc.entries) >= maxCachedPrincipals {
		pc.entries = make(map[string]cachedCaller)
	}
	pc.entries[hash] = cachedCaller{caller: c, expires: pc.clock().Add(PrincipalCacheTTL)}
}

// reset forgets every entry (a revocation on this replica takes effect at once).
func (pc *principalCache) reset() {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	pc.entries = nil
}

func (pc *principalCache) clock() time.Time {
	if pc.now != nil {
		return pc.now()
	}
	return time.Now()
}
