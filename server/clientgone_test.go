package server_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	"better-compute.dev/compute/app"
	"better-compute.dev/compute/app/apptest"
	v1 "better-compute.dev/compute/gen/go/bettercompute/compute/v1"
	"better-compute.dev/compute/gen/go/bettercompute/compute/v1/computev1connect"
	"better-compute.dev/compute/testwait"
)

// TestCallsEndedByTheirClientAreNotInternal: an update waiting for its load balancer's row (the
// test holds the lock) is ended by its client, by a deadline or by a cancel. The replica logs
// the call as canceled or deadline_exceeded with reason endedByClient, counts it under that code
// in bc_rpc_calls_total, and logs no internal error for it.
func TestCallsEndedByTheirClientAreNotInternal(t *testing.T) {
	logs := &lockedBuffer{}
	s := apptest.Start(t, func(c *app.Config) { c.Logger = slog.New(slog.NewJSONHandler(logs, nil)) })
	tn := s.NewTenant(t, "gone", "editor")
	yes := true
	lb, err := s.App.LoadBalancers.CreateLoadBalancer(tn.Ctx, &v1.CreateLoadBalancerRequest{
		TenantId: tn.ID, PoolId: tn.PoolID, Name: "held", Region: "nyc3", Targets: &v1.LoadBalancerTargets{Pool: &yes},
		Forwarding: []*v1.ForwardingRule{{EntryProtocol: "http", EntryPort: 80, TargetProtocol: "http", TargetPort: 8080}},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	holder, err := s.App.DB.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Rollback(context.Background())
	if _, err := holder.Exec(ctx, `SELECT 1 FROM load_balancers WHERE id = $1 FOR UPDATE`, lb.GetId()); err != nil {
		t.Fatal(err)
	}
	client := computev1connect.NewLoadBalancerServiceClient(h2c(), s.App.URL, bearer(tn.Token))
	const procedure = "/bettercompute.compute.v1.LoadBalancerService/UpdateLoadBalancer"
	for _, c := range []struct {
		name string
		end  func() (context.Context, context.CancelFunc)
		code string
	}{
		{"deadline", func() (context.Context, context.CancelFunc) { return context.WithTimeout(ctx, 300*time.Millisecond) }, "deadline_exceeded"},
		{"cancel", func() (context.Context, context.CancelFunc) {
			c, cancel := context.WithCancel(ctx)
			time.AfterFunc(300*time.Millisecond, cancel)
			return c, cancel
		}, "canceled"},
	} {
		t.Run(c.name, func(t *testing.T) {
			callCtx, cancel := c.end()
			defer cancel()
			_, err := client.UpdateLoadBalancer(callCtx, connect.NewRequest(&v1.UpdateLoadBalancerRequest{
				TenantId: tn.ID, LoadBalancerId: lb.GetId(), RedirectHttpToHttps: &yes}))
			if err == nil {
				t.Fatal("the update answered while its row was locked")
			}
			testwait.Until(t, 10*time.Second, "the replica counts the call as "+c.code, func() (bool, string) {
				n, _ := getMetrics(t, s.App.URL).sum("bc_rpc_calls_total", map[string]string{"procedure": procedure, "code": c.code})
				return n >= 1, fmt.Sprintf("%v calls", n)
			})
			found := false
			for _, line := range logs.lines() {
				if line["msg"] == "rpc" && line["procedure"] == procedure && line["code"] == c.code {
					found = found || line["reason"] == "endedByClient"
				}
			}
			if !found {
				t.Errorf("no rpc log line with code %s and reason endedByClient", c.code)
			}
		})
	}
	m := getMetrics(t, s.App.URL)
	if n, _ := m.sum("bc_rpc_calls_total", map[string]string{"procedure": procedure, "code": "internal"}); n != 0 {
		t.Errorf("%v updates counted internal", n)
	}
	for _, line := range logs.lines() {
		if line["level"] == "ERROR" || strings.Contains(fmt.Sprint(line["cause"]), "context canceled") {
			t.Errorf("error logged for a call its client ended: %v", line)
		}
	}
}
