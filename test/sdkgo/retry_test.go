package sdk_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"connectrpc.com/connect"

	"better-compute.dev/compute/app/apptest"
	v1 "better-compute.dev/compute/gen/go/bettercompute/compute/v1"
	sdk "better-compute.dev/compute/sdk/go"
)

// TestRetry: with WithRetry a read is resent after a transport failure; a create with an
// idempotencyKey whose answer was lost is resent and answers the one load balancer made; a create
// without a key and an update are sent once, their failure returned as UNAVAILABLE.
func TestRetry(t *testing.T) {
	s := apptest.Start(t)
	tn := s.NewTenant(t, "retry", "editor")
	ctx := t.Context()
	ft := &faultyTransport{}
	policy := sdk.RetryPolicy{MaxAttempts: 4, InitialBackoff: 10 * time.Millisecond, MaxBackoff: 50 * time.Millisecond}
	c := sdk.New(s.App.URL, tn.Token, sdk.WithHTTPClient(&http.Client{Transport: ft}), sdk.WithRetry(policy))
	lose := func(path string, n int64) {
		ft.losePath = path
		ft.lose.Store(n)
		ft.sent.Store(0)
	}
	unavailable := func(what string, err error) {
		t.Helper()
		if pe, ok := sdk.AsError(err); !ok || pe.Code != sdk.Unavailable {
			t.Fatalf("%s: %v, want UNAVAILABLE", what, err)
		}
	}

	// A keyed create whose first two answers are lost: three sends, one load balancer.
	lose("/CreateLoadBalancer", 2)
	resp, err := c.LoadBalancers.CreateLoadBalancer(ctx, lbCreate(tn, "keyed", "retry-key-1"))
	if err != nil || ft.sent.Load() != 3 {
		t.Fatalf("keyed create: %v, %d sends", err, ft.sent.Load())
	}
	id := resp.Msg.GetLoadBalancer().GetId()
	all, err := c.LoadBalancers.ListLoadBalancers(ctx, connect.NewRequest(&v1.ListLoadBalancersRequest{TenantId: tn.ID}))
	if err != nil || len(all.Msg.GetLoadBalancers()) != 1 || all.Msg.GetLoadBalancers()[0].GetId() != id {
		t.Fatalf("after the retried create: %v %v", all, err)
	}

	// A read: resent.
	lose("/GetLoadBalancer", 1)
	if _, err := c.LoadBalancers.GetLoadBalancer(ctx, connect.NewRequest(&v1.GetLoadBalancerRequest{TenantId: tn.ID, LoadBalancerId: id})); err != nil || ft.sent.Load() != 2 {
		t.Fatalf("get: %v, %d sends", err, ft.sent.Load())
	}
	// A read that keeps failing: MaxAttempts sends, then UNAVAILABLE.
	lose("/ListLoadBalancers", 10)
	_, err = c.LoadBalancers.ListLoadBalancers(ctx, connect.NewRequest(&v1.ListLoadBalancersRequest{TenantId: tn.ID}))
	unavailable("list", err)
	if ft.sent.Load() != 4 {
		t.Fatalf("list: %d sends, want 4", ft.sent.Load())
	}

	// Without a key: once (it may have been made; the caller must look).
	lose("/CreateLoadBalancer", 1)
	_, err = c.LoadBalancers.CreateLoadBalancer(ctx, lbCreate(tn, "unkeyed", ""))
	unavailable("create without a key", err)
	if ft.sent.Load() != 1 {
		t.Fatalf("create without a key: %d sends", ft.sent.Load())
	}
	// An update: once.
	lose("/UpdateLoadBalancer", 1)
	yes := true
	_, err = c.LoadBalancers.UpdateLoadBalancer(ctx, connect.NewRequest(&v1.UpdateLoadBalancerRequest{TenantId: tn.ID, LoadBalancerId: id, RedirectHttpToHttps: &yes}))
	unavailable("update", err)
	if ft.sent.Load() != 1 {
		t.Fatalf("update: %d sends", ft.sent.Load())
	}
	// Platform refusals are not retried.
	lose("", 0)
	_, err = c.LoadBalancers.GetLoadBalancer(ctx, connect.NewRequest(&v1.GetLoadBalancerRequest{TenantId: tn.ID, LoadBalancerId: "bad"}))
	if pe, ok := sdk.AsError(err); !ok || pe.Code != sdk.InvalidInput || ft.sent.Load() != 1 {
		t.Fatalf("invalid get: %v, %d sends", err, ft.sent.Load())
	}
	// Without WithRetry nothing is resent.
	plain := sdk.New(s.App.URL, tn.Token, sdk.WithHTTPClient(&http.Client{Transport: ft}))
	lose("/GetLoadBalancer", 1)
	_, err = plain.LoadBalancers.GetLoadBalancer(ctx, connect.NewRequest(&v1.GetLoadBalancerRequest{TenantId: tn.ID, LoadBalancerId: id}))
	unavailable("get without retries", err)
	if ft.sent.Load() != 1 {
		t.Fatalf("get without retries: %d sends", ft.sent.Load())
	}
}

// TestDefaultTimeout: WithTimeout ends a call that sets no deadline of its own, as the caller's
// deadline (never a platform error); a call's own deadline is kept.
func TestDefaultTimeout(t *testing.T) {
	hang := &http.Client{Transport: &faultyTransport{hang: true}}
	c := sdk.New("http://127.0.0.1:1", "bct_x", sdk.WithHTTPClient(hang), sdk.WithTimeout(200*time.Millisecond), sdk.WithRetry(sdk.RetryPolicy{}))
	start := time.Now()
	_, err := c.Tenants.ListTenants(t.Context(), connect.NewRequest(&v1.ListTenantsRequest{}))
	took := time.Since(start)
	if !errors.Is(err, context.DeadlineExceeded) || took < 150*time.Millisecond || took > 2*time.Second {
		t.Fatalf("default timeout: %v after %s", err, took)
	}
	if _, isPlatform := sdk.AsError(err); isPlatform {
		t.Fatalf("the default timeout is a platform error: %v", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 600*time.Millisecond)
	defer cancel()
	start = time.Now()
	_, err = c.Tenants.ListTenants(ctx, connect.NewRequest(&v1.ListTenantsRequest{}))
	if took := time.Since(start); !errors.Is(err, context.DeadlineExceeded) || took < 500*time.Millisecond {
		t.Fatalf("own deadline: %v after %s", err, took)
	}
}
