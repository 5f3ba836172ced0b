package authz

import (
	"context"
	"testing"
	"time"
)

// TestDecisionCache: answers are served within the TTL and not after; a local write forgets
// them, and an answer computed before that write is not stored after it.
func TestDecisionCache(t *testing.T) {
	now := time.Unix(1000, 0)
	d := newDecisions(time.Second)
	d.now = func() time.Time { return now }
	ck := Check{"p1", LoadBalancersRead, TenantObject("t1")}
	if _, ok, _ := d.get(ck); ok {
		t.Fatal("empty cache answered")
	}
	_, _, gen := d.get(ck)
	d.put(ck, true, gen, now)
	if allowed, ok, _ := d.get(ck); !ok || !allowed {
		t.Fatalf("fresh answer = %v, %v; want true, hit", allowed, ok)
	}
	now = now.Add(time.Second)
	if _, ok, _ := d.get(ck); ok {
		t.Fatal("an answer as old as the TTL was served")
	}
	_, _, gen = d.get(ck)
	d.put(ck, true, gen, now)
	d.invalidate()
	if _, ok, _ := d.get(ck); ok {
		t.Fatal("an answer survived a local write")
	}
	_, _, before := d.get(ck) // a check in flight while a revocation is written
	d.invalidate()
	d.put(ck, true, before, now)
	if _, ok, _ := d.get(ck); ok {
		t.Fatal("an answer computed before a local write was stored after it")
	}
}

// TestGrantThroughThisReplicaIsSeenAtOnce: with the real engine, a cached denial does not hide
// a grant made through the same client, nor a cached allowance a revocation.
func TestGrantThroughThisReplicaIsSeenAtOnce(t *testing.T) {
	ctx := context.Background()
	e, err := NewEmbedded(ctx, EmbeddedOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ck := Check{"p-cache", LoadBalancersManage, TenantObject("t-cache")}
	for _, step := range []struct {
		do   func() error
		want bool
	}{
		{func() error { return nil }, false},
		{func() error { return e.GrantTenantRole(ctx, "t-cache", "p-cache", RoleEditor) }, true},
		{func() error { return e.RevokeTenantRole(ctx, "t-cache", "p-cache", RoleEditor) }, false},
	} {
		if err := step.do(); err != nil {
			t.Fatal(err)
		}
		for range 2 { // the second answer comes from the cache
			if got, err := e.Check(ctx, ck); err != nil || got != step.want {
				t.Fatalf("check = %v, %v; want %v", got, err, step.want)
			}
			if got, err := e.BatchCheck(ctx, []Check{ck}); err != nil || got[0] != step.want {
				t.Fatalf("batch check = %v, %v; want %v", got, err, step.want)
			}
		}
	}
}

// TestDecisionCacheForgetsOnlyTheChangedPrincipal: a change the feed attributes to one principal
// forgets that principal's answers, cached or in flight, and leaves every other's; a change it
// cannot attribute forgets all. Left answers outlive the TTL while reads confirm them.
func TestDecisionCacheForgetsOnlyTheChangedPrincipal(t *testing.T) {
	now := time.Unix(1000, 0)
	d := newDecisions(time.Second)
	d.now = func() time.Time { return now }
	a := Check{"pa", LoadBalancersRead, TenantObject("t1")}
	b := Check{"pb", LoadBalancersRead, TenantObject("t1")}
	c := Check{"pc", LoadBalancersRead, TenantObject("t1")}
	_, _, gen := d.get(a)
	d.put(a, true, gen, now)
	_, _, inFlight := d.get(b) // b and c are being asked while the change is read
	d.applyChanges(now, map[string]bool{"pa": true, "pc": true}, false)
	d.put(b, true, inFlight, now)
	d.put(c, true, inFlight, now)
	for _, tc := range []struct {
		ck   Check
		want bool
	}{{a, false}, {b, true}, {c, false}} {
		if _, ok, _ := d.get(tc.ck); ok != tc.want {
			t.Errorf("%s cached = %v after a change of pa and pc, want %v", tc.ck.Principal, ok, tc.want)
		}
	}
	now = now.Add(3 * time.Second)
	d.applyChanges(now, nil, false)
	if _, ok, _ := d.get(b); !ok {
		t.Error("an answer confirmed by a read was dropped after the TTL")
	}
	d.applyChanges(now, nil, true)
	if _, ok, _ := d.get(b); ok {
		t.Error("an answer survived a change the feed could not attribute")
	}
}
