package core

import (
	"context"
	"sync"
	"time"

	"better-compute.dev/compute/store"
	"golang.org/x/sync/singleflight"
)

// PrincipalCacheTTL bounds how stale an authenticated caller may be. A replica answers a bearer
// token from memory while either it read the token and its principal from the database less
// than PrincipalCacheTTL ago, or a read of the credential version (raised by every revocation in
// its own transaction, store.RevokeToken) that began less than PrincipalCacheTTL ago found it
// unchanged. A revoked token is therefore refused by every replica at most PrincipalCacheTTL
// after the revocation committed (docs/architecture.md, "Caching"); when the version cannot be read, entries
// fall back to living PrincipalCacheTTL. Roles are not cached here: OpenFGA decides them
// (authz's decision cache).
const PrincipalCacheTTL = time.Second

// maxCachedPrincipals bounds the cache's memory; when full it starts over (a cold cache costs
// one read per token, never a wrong answer).
const maxCachedPrincipals = 10000

// Timing of the credential version reads: one every credentialPoll keeps the last confirmation
// younger than PrincipalCacheTTL; the reads stop after credentialIdle without an authentication
// and start again (with the cache started over) at the next one.
const (
	credentialPoll = 400 * time.Millisecond
	credentialIdle = time.Minute
)

// principalCache remembers recently authenticated tokens (by the SHA-256 of the secret, never
// the secret). Only successes are kept: a token minted a moment ago works at once on every
// replica, and a wrong one is read every time.
type principalCache struct {
	// lookups collapses concurrent reads of one token.
	lookups singleflight.Group

	mu      sync.Mutex
	entries map[string]cachedCaller
	now     func() time.Time
	// gen is bumped whenever entries are forgotten: a lookup that began before is not stored.
	gen uint64
	// version is the credential version last read (known once a read succeeded since the
	// reads started); confirmed is when that read began.
	version      int64
	knownVersion bool
	confirmed    time.Time

	// The version reads run while the replica authenticates (touch).
	running bool
	lastUse time.Time
	reads   int // successful reads (tests)
}

type cachedCaller struct {
	caller  Caller
	expires time.Time // PrincipalCacheTTL after the lookup began
	// tokenExpires is when the token itself expires (zero: never).
	tokenExpires time.Time
	// ttlOnly entries are not kept past expires by the version reads: a platform principal's
	// PlatformAdmin comes from OpenFGA, not from the tables the version covers.
	ttlOnly bool
}

func (pc *principalCache) get(hash string) (Caller, bool) {
	c, ok, _ := pc.lookup(hash)
	return c, ok
}

// lookup returns a cached caller and the generation a miss must present to store its answer.
func (pc *principalCache) lookup(hash string) (Caller, bool, uint64) {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	e, ok := pc.entries[hash]
	if !ok {
		return Caller{}, false, pc.gen
	}
	now := pc.clock()
	if !e.tokenExpires.IsZero() && !now.Before(e.tokenExpires) {
		delete(pc.entries, hash)
		return Caller{}, false, pc.gen
	}
	if now.Before(e.expires) || (!e.ttlOnly && now.Before(pc.confirmed.Add(PrincipalCacheTTL))) {
		return e.caller, true, pc.gen
	}
	return Caller{}, false, pc.gen
}

// put stores a caller whose lookup began at asked while the generation was gen; one that a
// revocation may have overtaken meanwhile is dropped.
func (pc *principalCache) put(hash string, c Caller, gen uint64, asked, tokenExpires time.Time) {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if gen != pc.gen {
		return
	}
	if pc.entries == nil || len(pc.entries) >= maxCachedPrincipals {
		pc.entries = make(map[string]cachedCaller)
	}
	pc.entries[hash] = cachedCaller{caller: c, expires: asked.Add(PrincipalCacheTTL), tokenExpires: tokenExpires, ttlOnly: c.PlatformAdmin}
}

// reset forgets every entry (a revocation on this replica takes effect at once).
func (pc *principalCache) reset() {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	pc.forgetLocked()
}

func (pc *principalCache) forgetLocked() {
	pc.gen++
	pc.entries = nil
}

// applyVersion records a read of the credential version that began at readAt. The first read
// since the reads started only sets the baseline, so everything cached before it is forgotten; a
// version that moved forgets everything too. What is left is confirmed as of readAt.
func (pc *principalCache) applyVersion(readAt time.Time, v int64) {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if !pc.knownVersion || v != pc.version {
		pc.forgetLocked()
	}
	pc.version, pc.knownVersion = v, true
	if readAt.After(pc.confirmed) {
		pc.confirmed = readAt
	}
	pc.reads++
}

// touch notes an authentication and starts the version reads if they are not running.
func (pc *principalCache) touch(db *store.DB) {
	if db == nil {
		return
	}
	pc.mu.Lock()
	defer pc.mu.Unlock()
	pc.lastUse = pc.clock()
	if pc.running {
		return
	}
	pc.running = true
	pc.knownVersion = false
	go pc.watchVersion(db)
}

// watchVersion reads the credential version every credentialPoll until the replica stops
// authenticating. A failed read leaves the last confirmation to age: entries fall back to
// PrincipalCacheTTL until a read succeeds.
func (pc *principalCache) watchVersion(db *store.DB) {
	t := time.NewTicker(credentialPoll)
	defer t.Stop()
	for {
		readAt := pc.clock()
		ctx, cancel := context.WithTimeout(store.Housekeeping(context.Background()), 2*credentialPoll)
		v, err := store.CredentialVersion(ctx, db.Q())
		cancel()
		if err == nil {
			pc.applyVersion(readAt, v)
		}
		<-t.C
		pc.mu.Lock()
		if pc.clock().Sub(pc.lastUse) > credentialIdle {
			pc.running = false
			pc.mu.Unlock()
			return
		}
		pc.mu.Unlock()
	}
}

// CredentialVersionReads counts the replica's successful reads of the credential version. Once
// it is at least one, the cache has its baseline and forgets its entries only when the version
// moves: a test that counts a call's statements waits for it so that the baseline's forgetting
// does not land inside the counted call.
func (s *Base) CredentialVersionReads() int {
	s.principals.mu.Lock()
	defer s.principals.mu.Unlock()
	return s.principals.reads
}

func (pc *principalCache) clock() time.Time {
	if pc.now != nil {
		return pc.now()
	}
	return time.Now()
}
