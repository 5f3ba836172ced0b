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
