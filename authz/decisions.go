package authz

import (
	"sync"
	"time"
)

// DecisionTTL bounds how stale a cached authorization answer may be. A grant or revocation made
// through this replica clears its cache at once; one made through another replica (or straight
// in the engine) is seen here within DecisionTTL. With the principal cache's own 1 s bound this
// keeps the platform's promise: a revoked token or role is refused on every replica within 2 s.
const DecisionTTL = time.Second

// decisionLimit bounds the cache's size; a full cache starts over rather than evicting one by
// one (it refills within a TTL anyway).
const decisionLimit = 100_000

// decisions caches the engine's answers per (principal, permission, object, tenant). The engine
// still decides every answer the cache holds; the cache only spares asking again within the bound.
type decisions struct {
	ttl time.Duration
	now func() time.Time

	mu  sync.Mutex
	gen uint64 // bumped by every local write: answers computed before it are not stored
	m   map[Check]decision
}

type decision struct {
	allowed bool
	expires time.Time
}

func newDecisions(ttl time.Duration) *decisions {
	return &decisions{ttl: ttl, now: time.Now, m: map[Check]decision{}}
}

// get returns a cached answer and the generation a miss must present to store its answer.
func (d *decisions) get(ck Check) (allowed, ok bool, gen uint64) {
	if d == nil || d.ttl <= 0 {
		return false, false, 0
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	e, hit := d.m[ck]
	if hit && d.now().Before(e.expires) {
		return e.allowed, true, d.gen
	}
	if hit {
		delete(d.m, ck)
	}
	return false, false, d.gen
}

// put stores an answer computed while the generation was gen; an answer that a local write may
// have overtaken meanwhile is dropped.
func (d *decisions) put(ck Check, allowed bool, gen uint64, asked time.Time) {
	if d == nil || d.ttl <= 0 {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if gen != d.gen {
		return
	}
	if len(d.m) >= decisionLimit {
		d.m = map[Check]decision{}
	}
	// The bound runs from when the engine was asked, not from when it answered.
	d.m[ck] = decision{allowed: allowed, expires: asked.Add(d.ttl)}
}

// invalidate forgets every answer: a tuple changed through this replica.
func (d *decisions) invalidate() {
	if d == nil {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.gen++
	clear(d.m)
}
