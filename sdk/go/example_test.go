package sdk_test

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"time"

	"connectrpc.com/connect"

	v1 "better-compute.dev/compute/gen/go/bettercompute/compute/v1"
	"better-compute.dev/compute/gen/go/bettercompute/compute/v1/computev1connect"
	sdk "better-compute.dev/compute/sdk/go"
)

// fakeLoadBalancers stands in for the platform in this example: a load balancer it creates turns
// ready on the second read. It serves no EventService, so the waiter falls back to polling.
type fakeLoadBalancers struct {
	computev1connect.UnimplementedLoadBalancerServiceHandler
	reads atomic.Int64
}

func (f *fakeLoadBalancers) CreateLoadBalancer(_ context.Context, r *connect.Request[v1.CreateLoadBalancerRequest]) (*connect.Response[v1.CreateLoadBalancerResponse], error) {
	return connect.NewResponse(&v1.CreateLoadBalancerResponse{LoadBalancer: &v1.LoadBalancer{
		Id: "plb_example", TenantId: r.Msg.GetTenantId(), Name: r.Msg.GetName(), State: string(sdk.LoadBalancerPending)}}), nil
}

func (f *fakeLoadBalancers) GetLoadBalancer(_ context.Context, r *connect.Request[v1.GetLoadBalancerRequest]) (*connect.Response[v1.GetLoadBalancerResponse], error) {
	lb := &v1.LoadBalancer{Id: r.Msg.GetLoadBalancerId(), TenantId: r.Msg.GetTenantId(), Name: "web", State: string(sdk.LoadBalancerPending)}
	if f.reads.Add(1) >= 2 {
		lb.State, lb.Address = string(sdk.LoadBalancerReady), "203.0.113.10"
	}
	return connect.NewResponse(&v1.GetLoadBalancerResponse{LoadBalancer: lb}), nil
}

// Create a load balancer and wait until it is ready.
func Example() {
	mux := http.NewServeMux()
	mux.Handle(computev1connect.NewLoadBalancerServiceHandler(&fakeLoadBalancers{}))
	platform := httptest.NewServer(mux)
	defer platform.Close()

	ctx := context.Background()
	client := sdk.New(platform.URL, "bct_example",
		sdk.WithTimeout(30*time.Second),  // every call without a deadline of its own
		sdk.WithRetry(sdk.RetryPolicy{})) // reads and keyed creates, on UNAVAILABLE
	pool := true
	created, err := client.LoadBalancers.CreateLoadBalancer(ctx, connect.NewRequest(&v1.CreateLoadBalancerRequest{
		TenantId: "acme", PoolId: "pool_example", Name: "web", Region: "nyc3",
		Targets:        &v1.LoadBalancerTargets{Pool: &pool},
		Forwarding:     []*v1.ForwardingRule{{EntryProtocol: "http", EntryPort: 80, TargetProtocol: "http", TargetPort: 8080}},
		IdempotencyKey: "web-1", // makes the create safe to retry
	}))
	if pe, ok := sdk.AsError(err); ok {
		log.Fatalf("create: %s (field %q, request %s)", pe.Code, pe.Field, pe.RequestID)
	} else if err != nil {
		log.Fatal(err) // e.g. the caller's own deadline
	}
	lb := created.Msg.GetLoadBalancer()
	fmt.Println(lb.GetName(), lb.GetState())

	lb, err = sdk.WaitLoadBalancer(ctx, client, "acme", lb.GetId(), sdk.WaitOptions{
		Until: []sdk.LoadBalancerState{sdk.LoadBalancerReady}, Timeout: 5 * time.Minute, PollInterval: 10 * time.Millisecond})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(lb.GetName(), sdk.LoadBalancerStateOf(lb), lb.GetAddress())
	// Output:
	// web pending
	// web ready 203.0.113.10
}
