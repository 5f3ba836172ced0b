package authz

import (
	"sync"
	"time"
)

// DecisionTTL bounds how stale a cached authorization answer may be. A grant or revocation made
// through this replica clears its cache at once. One made through another replica (or straight in
// the engine) is learned from the engine's change feed (changes.go): an answer is served while
// either the engine answered it less than DecisionTTL ago or a read of the feed that began less
// than DecisionTTL ago found nothing it rests on changed. With the principal cache's own bound
// this keeps the platform's promise: a revoked token or role is refused on every replica within
// 2 s; when the feed cannot be read, answers fall back to living DecisionTTL.
const DecisionTTL = time.Second

// decisionLimit bounds the cache's size; a full cache starts over rather than evicting one by
// one (a cold answer costs one engine check, never a wrong answer).
const decisionLimit = 100_000

// decisions caches the engine's answers per (principal, permission, object, tenant). The engine
// still decides every answer the cache holds; the cache only spares asking again while nothing
// the answer rests on is known to have changed.
type decisions struct {
	ttl time.Duration
	now func() time.Time

	mu sync.Mutex
	// gen is bumped by every write seen; an answer is stored only if nothing it rests on was
	// forgotten since the generation it was asked at: not everything (flushed), not its
	// principal (forgot).
	gen     uint64
	flushed uint64
	forgot  map[string]uint64
	m       map[Check]decision
	// confirmed is when the last read of the change feed began whose changes have been applied;
	// every answer still held was confirmed unchanged as of then.
	confirmed time.Time
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
	now := d.now()
	if hit && (now.Before(e.expires) || now.Before(d.confirmed.Add(d.ttl))) {
		return e.allowed, true, d.gen
	}
	if hit {
		delete(d.m, ck)
	}
	return false, false, d.gen
}

// put stores an answer computed while the generation was gen; an answer that a write may have
// overtaken meanwhile is dropped.
func (d *decisions) put(ck Check, allowed bool, gen uint64, asked time.Time) {
	if d == nil || d.ttl <= 0 {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if gen < d.flushed || gen < d.forgot[ck.Principal] {
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
	d.flushLocked()
}

func (d *decisions) flushLocked() {
	d.gen++
	d.flushed = d.gen
	d.forgot = nil
	clear(d.m)
}

// applyChanges records one read of the change feed that began at readAt: the answers of the
// principals it names are forgotten (all answers when all is set: a change the feed could not
// attribute, or a read that may have missed some), and every answer left is confirmed as of
// readAt.
func (d *decisions) applyChanges(readAt time.Time, principals map[string]bool, all bool) {
	if d == nil {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	switch {
	case all || len(d.forgot)+len(principals) > decisionLimit:
		d.flushLocked()
	case len(principals) > 0:
		// Answers of these principals in flight may rest on the old tuples: not stored.
		d.gen++
		if d.forgot == nil {
			d.forgot = map[string]uint64{}
		}
		for p := range principals {
			d.forgot[p] = d.gen
		}
		for ck := range d.m {
			if principals[ck.Principal] {
				delete(d.m, ck)
			}
		}
	}
	if readAt.After(d.confirmed) {
		d.confirmed = readAt
	}
}
