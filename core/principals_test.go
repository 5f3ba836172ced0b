package core

import (
	"testing"
	"time"
)

// TestPrincipalCacheKeptUntilChange: an entry outlives PrincipalCacheTTL while version reads
// confirm nothing changed, is forgotten when the version moves, falls back to the TTL when the
// reads stop, never outlives its token, and a platform principal's entry keeps to the TTL.
func TestPrincipalCacheKeptUntilChange(t *testing.T) {
	t0 := time.Unix(1000, 0)
	type step struct {
		reason  string
		at      time.Duration // since t0
		version int64         // a version read beginning at `at`; -1: none
		want    bool          // whether the entry is served at `at`
	}
	cases := []struct {
		name         string
		caller       Caller
		tokenExpires time.Duration // 0: never
		steps        []step
	}{
		{"confirmed reads keep a tenant caller", Caller{PrincipalID: "p", TenantID: "t"}, 0, []step{
			{"fresh", 500 * time.Millisecond, -1, true},
			{"past the TTL, a read confirms", 3 * time.Second, 7, true},
			{"a later read confirms", 3400 * time.Millisecond, 7, true},
			{"the version moved", 3800 * time.Millisecond, 8, false},
		}},
		{"reads that stop fall back to the TTL", Caller{PrincipalID: "p", TenantID: "t"}, 0, []step{
			{"confirmed", 2 * time.Second, 7, true},
			{"no read for PrincipalCacheTTL", 3 * time.Second, -1, false},
		}},
		{"the token expires", Caller{PrincipalID: "p", TenantID: "t"}, 2 * time.Second, []step{
			{"confirmed before expiry", 1500 * time.Millisecond, 7, true},
			{"confirmed but expired", 2100 * time.Millisecond, 7, false},
		}},
		{"a platform principal keeps to the TTL", Caller{PrincipalID: "p", PlatformAdmin: true}, 0, []step{
			{"fresh", 500 * time.Millisecond, 7, true},
			{"past the TTL though confirmed", 1500 * time.Millisecond, 7, false},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			now := t0
			pc := &principalCache{now: func() time.Time { return now }}
			// The first read sets the baseline (and forgets what came before it).
			pc.applyVersion(now, 7)
			_, _, gen := pc.lookup("k")
			var expires time.Time
			if tc.tokenExpires > 0 {
				expires = t0.Add(tc.tokenExpires)
			}
			pc.put("k", tc.caller, gen, now, expires)
			for _, s := range tc.steps {
				now = t0.Add(s.at)
				if s.version >= 0 {
					pc.applyVersion(now, s.version)
				}
				if _, ok := pc.get("k"); ok != s.want {
					t.Fatalf("%s: served = %v, want %v", s.reason, ok, s.want)
				}
			}
		})
	}
}

// TestPrincipalCacheDropsOvertakenLookup: a lookup that began before the cache forgot its entries
// (a revocation here, or a version that moved) is not stored; the first version read forgets what
// was cached before the reads began.
func TestPrincipalCacheDropsOvertakenLookup(t *testing.T) {
	now := time.Unix(1000, 0)
	pc := &principalCache{now: func() time.Time { return now }}
	c := Caller{PrincipalID: "p", TenantID: "t"}

	_, _, gen := pc.lookup("k")
	pc.reset()
	pc.put("k", c, gen, now, time.Time{})
	if _, ok := pc.get("k"); ok {
		t.Fatal("a lookup overtaken by a local revocation was stored")
	}

	_, _, gen = pc.lookup("k")
	pc.put("k", c, gen, now, time.Time{})
	pc.applyVersion(now, 3) // the baseline
	if _, ok := pc.get("k"); ok {
		t.Fatal("an entry cached before the first version read survived it")
	}

	_, _, gen = pc.lookup("k")
	pc.applyVersion(now, 4)
	pc.put("k", c, gen, now, time.Time{})
	if _, ok := pc.get("k"); ok {
		t.Fatal("a lookup overtaken by a version change was stored")
	}
}
