package authz

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	openfgav1 "github.com/openfga/api/proto/openfga/v1"
)

// countingEngine counts the checks that reach the engine and can fail the change feed.
type countingEngine struct {
	engine
	checks      atomic.Int64
	failChanges atomic.Bool
}

func (e *countingEngine) Check(ctx context.Context, r *openfgav1.CheckRequest) (*openfgav1.CheckResponse, error) {
	e.checks.Add(1)
	return e.engine.Check(ctx, r)
}

func (e *countingEngine) BatchCheck(ctx context.Context, r *openfgav1.BatchCheckRequest) (*openfgav1.BatchCheckResponse, error) {
	e.checks.Add(int64(len(r.GetChecks())))
	return e.engine.BatchCheck(ctx, r)
}

func (e *countingEngine) ReadChanges(ctx context.Context, r *openfgav1.ReadChangesRequest) (*openfgav1.ReadChangesResponse, error) {
	if e.failChanges.Load() {
		return nil, errors.New("change feed down")
	}
	return e.engine.ReadChanges(ctx, r)
}

// waitReads waits until the feed has applied n more successful reads.
func waitReads(t *testing.T, c *client, n int) {
	t.Helper()
	c.feed.mu.Lock()
	want := c.feed.reads + n
	c.feed.mu.Unlock()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		c.feed.mu.Lock()
		got := c.feed.reads
		c.feed.mu.Unlock()
		if got >= want {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("the change feed did not read %d more times", n)
}

// TestDecisionsKeptUntilChange, on the embedded engine and on a remote one over HTTP: an answer
// older than DecisionTTL is still served from the cache while the change feed confirms nothing
// changed (no engine check), a role removed straight in the engine (not through this client, as
// another replica would) is refused once the feed has read it, and a feed that cannot be read
// falls back to DecisionTTL.
func TestDecisionsKeptUntilChange(t *testing.T) {
	t.Parallel()
	engines := map[string]func(t *testing.T) *client{
		"embedded": func(t *testing.T) *client { return newMemory(t).client },
		"remote":   func(t *testing.T) *client { return newRemote(t, serveEngine(t).URL).client },
	}
	for name, open := range engines {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			c := open(t)
			counted := &countingEngine{engine: c.eng}
			c.eng = counted
			const principal, tenant = "prn_cache:1", "acme:prod"
			if err := c.GrantTenantRole(ctx, tenant, principal, RoleViewer); err != nil {
				t.Fatal(err)
			}
			other := &client{eng: c.eng, model: c.model, boot: c.boot, binding: c.binding, reqContext: c.reqContext, cache: newDecisions(DecisionTTL)}
			other.feed.c = other
			ck := Check{Principal: principal, Permission: LoadBalancersRead, Object: TenantObject(tenant)}
			bystander := Check{Principal: "prn_bystander", Permission: LoadBalancersRead, Object: TenantObject(tenant)}
			check := func(cl *client, ck Check, want bool) {
				t.Helper()
				got, err := cl.Check(ctx, ck)
				if err != nil || got != want {
					t.Fatalf("check %s = %v, %v; want %v", ck.Principal, got, err, want)
				}
			}
			// The feed's first read sees the grant above (it is inside its window) and forgets
			// that principal's answers once; start from there.
			check(c, bystander, false)
			waitReads(t, c, 1)
			check(c, ck, true)
			check(c, bystander, false)
			before := counted.checks.Load()
			time.Sleep(DecisionTTL + 200*time.Millisecond)
			waitReads(t, c, 1)
			check(c, ck, true)
			check(c, bystander, false)
			if n := counted.checks.Load() - before; n != 0 {
				t.Fatalf("answers older than the TTL cost %d engine checks while nothing changed; want 0", n)
			}

			// Another replica removes the role: this one learns it from the feed.
			if err := other.RevokeTenantRole(ctx, tenant, principal, RoleViewer); err != nil {
				t.Fatal(err)
			}
			waitReads(t, c, 2)
			before = counted.checks.Load()
			check(c, ck, false)
			check(c, bystander, false)
			if n := counted.checks.Load() - before; n != 1 {
				t.Fatalf("after the change: %d engine checks, want 1 (the changed principal only)", n)
			}

			// The feed fails: answers live DecisionTTL, no longer.
			counted.failChanges.Store(true)
			time.Sleep(DecisionTTL + 200*time.Millisecond)
			before = counted.checks.Load()
			check(c, bystander, false)
			if n := counted.checks.Load() - before; n != 1 {
				t.Fatalf("with the feed down an answer older than the TTL cost %d engine checks, want 1", n)
			}
		})
	}
}

// TestChangedPrincipal: a tuple of one principal names it (decoded); any other shape names none.
func TestChangedPrincipal(t *testing.T) {
	t.Parallel()
	cases := []struct {
		user string
		want string
		ok   bool
	}{
		{"user:prn_1", "prn_1", true},
		{"user:" + EngineID("a:b#c%"), "a:b#c%", true},
		{"user:*", "", false},
		{"compute-tenant:acme#admin", "", false},
		{"user:bad%zz", "", false},
	}
	for _, tc := range cases {
		got, ok := changedPrincipal(&openfgav1.TupleChange{TupleKey: &openfgav1.TupleKey{User: tc.user}})
		if got != tc.want || ok != tc.ok {
			t.Errorf("changedPrincipal(%q) = %q, %v; want %q, %v", tc.user, got, ok, tc.want, tc.ok)
		}
	}
}
