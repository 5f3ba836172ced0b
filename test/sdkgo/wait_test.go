package sdk_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"connectrpc.com/connect"

	v1 "better-compute.dev/compute/gen/go/bettercompute/compute/v1"
	"better-compute.dev/compute/ids"
	sdk "better-compute.dev/compute/sdk/go"
)

// TestWaitLoadBalancer: the waiter returns the load balancer once it is ready, over the event
// stream or, when the stream is refused, by polling; it waits for deleted too, and a wait that
// runs out of time is the caller's deadline, with the last state read.
func TestWaitLoadBalancer(t *testing.T) {
	s := reconcilingStack(t)
	tn := s.NewTenant(t, "waiter", "editor")
	c := sdk.New(s.App.URL, tn.Token)
	ctx := t.Context()

	// Over the stream.
	resp, err := c.LoadBalancers.CreateLoadBalancer(ctx, lbCreate(tn, "wait-stream", "wait-1"))
	if err != nil {
		t.Fatal(err)
	}
	id := resp.Msg.GetLoadBalancer().GetId()
	start := time.Now()
	lb, err := sdk.WaitLoadBalancer(ctx, c, tn.ID, id, sdk.WaitOptions{Timeout: 30 * time.Second, PollInterval: time.Hour})
	if err != nil || sdk.LoadBalancerStateOf(lb) != sdk.LoadBalancerReady || lb.GetAddress() == "" {
		t.Fatalf("wait over the stream: %v %v", lb, err)
	}
	t.Logf("ready over the stream after %s", time.Since(start))

	// The stream refused: the poll fallback.
	ft := &faultyTransport{refuse: "/WatchEvents"}
	polling := sdk.New(s.App.URL, tn.Token, sdk.WithHTTPClient(&http.Client{Transport: ft}))
	resp, err = polling.LoadBalancers.CreateLoadBalancer(ctx, lbCreate(tn, "wait-poll", "wait-2"))
	if err != nil {
		t.Fatal(err)
	}
	lb, err = sdk.WaitLoadBalancer(ctx, polling, tn.ID, resp.Msg.GetLoadBalancer().GetId(), sdk.WaitOptions{Timeout: 30 * time.Second, PollInterval: 50 * time.Millisecond})
	if err != nil || lb.GetState() != "ready" || ft.refused.Load() == 0 {
		t.Fatalf("wait by polling: %v %v (watch refused %d times)", lb, err, ft.refused.Load())
	}

	// Out of time: the caller's deadline, with what was last read.
	_, err = sdk.WaitLoadBalancer(ctx, c, tn.ID, id, sdk.WaitOptions{Until: []sdk.LoadBalancerState{sdk.LoadBalancerUpdating}, Timeout: 300 * time.Millisecond})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("timeout: %v", err)
	}
	if _, isPlatform := sdk.AsError(err); isPlatform {
		t.Fatalf("a wait that ran out is a platform error: %v", err)
	}

	// Deleted.
	if _, err := c.LoadBalancers.DeleteLoadBalancer(ctx, connect.NewRequest(&v1.DeleteLoadBalancerRequest{TenantId: tn.ID, LoadBalancerId: id})); err != nil {
		t.Fatal(err)
	}
	lb, err = sdk.WaitLoadBalancer(ctx, c, tn.ID, id, sdk.WaitOptions{Until: []sdk.LoadBalancerState{sdk.LoadBalancerDeleted}, Timeout: 30 * time.Second})
	if err != nil || sdk.LoadBalancerStateOf(lb) != sdk.LoadBalancerDeleted {
		t.Fatalf("wait for deleted: %v %v", lb, err)
	}

	// An unknown id is NOT_FOUND at once.
	_, err = sdk.WaitLoadBalancer(ctx, c, tn.ID, ids.New(ids.LoadBalancer), sdk.WaitOptions{Timeout: 10 * time.Second})
	if pe, ok := sdk.AsError(err); !ok || pe.Code != sdk.NotFound {
		t.Fatalf("unknown id: %v", err)
	}
}
