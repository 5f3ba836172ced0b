package server

import (
	"context"

	"connectrpc.com/connect"

	"better-compute.dev/compute/core/events"
	"better-compute.dev/compute/core/loadbalancers"
	v1 "better-compute.dev/compute/gen/go/bettercompute/compute/v1"
	"better-compute.dev/compute/gen/go/bettercompute/compute/v1/computev1connect"
	"better-compute.dev/compute/observe"
)

// The handlers are thin: the interceptor has validated and authenticated; core authorizes and
// does the work; the handler only wraps the answer.

type loadBalancers struct{ svc *loadbalancers.Service }

var _ computev1connect.LoadBalancerServiceHandler = loadBalancers{}

func (h loadBalancers) CreateLoadBalancer(ctx context.Context, r *connect.Request[v1.CreateLoadBalancerRequest]) (*connect.Response[v1.CreateLoadBalancerResponse], error) {
	lb, err := h.svc.CreateLoadBalancer(ctx, r.Msg)
	return reply(&v1.CreateLoadBalancerResponse{LoadBalancer: lb}, err)
}

func (h loadBalancers) ListLoadBalancers(ctx context.Context, r *connect.Request[v1.ListLoadBalancersRequest]) (*connect.Response[v1.ListLoadBalancersResponse], error) {
	lbs, next, err := h.svc.ListLoadBalancersPage(ctx, r.Msg)
	return reply(&v1.ListLoadBalancersResponse{LoadBalancers: lbs, NextPageToken: next}, err)
}

func (h loadBalancers) GetLoadBalancer(ctx context.Context, r *connect.Request[v1.GetLoadBalancerRequest]) (*connect.Response[v1.GetLoadBalancerResponse], error) {
	lb, err := h.svc.GetLoadBalancer(ctx, r.Msg)
	return reply(&v1.GetLoadBalancerResponse{LoadBalancer: lb}, err)
}

func (h loadBalancers) UpdateLoadBalancer(ctx context.Context, r *connect.Request[v1.UpdateLoadBalancerRequest]) (*connect.Response[v1.UpdateLoadBalancerResponse], error) {
	lb, err := h.svc.UpdateLoadBalancer(ctx, r.Msg)
	return reply(&v1.UpdateLoadBalancerResponse{LoadBalancer: lb}, err)
}

func (h loadBalancers) DeleteLoadBalancer(ctx context.Context, r *connect.Request[v1.DeleteLoadBalancerRequest]) (*connect.Response[v1.DeleteLoadBalancerResponse], error) {
	lb, err := h.svc.DeleteLoadBalancer(ctx, r.Msg)
	return reply(&v1.DeleteLoadBalancerResponse{LoadBalancer: lb}, err)
}

// reply wraps a result, or passes the error on for the interceptor to translate.
func reply[T any](msg *T, err error) (*connect.Response[T], error) {
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(msg), nil
}

type eventService struct {
	svc *events.Service
	ic  *edge
}

var _ computev1connect.EventServiceHandler = eventService{}

func (h eventService) ListEvents(ctx context.Context, r *connect.Request[v1.ListEventsRequest]) (*connect.Response[v1.ListEventsResponse], error) {
	evs, next, err := h.svc.ListEvents(ctx, r.Msg)
	return reply(&v1.ListEventsResponse{Events: evs, NextCursor: next}, err)
}

func (h eventService) WatchEvents(ctx context.Context, r *connect.Request[v1.WatchEventsRequest], stream *connect.ServerStream[v1.WatchEventsResponse]) error {
	if err := h.ic.validateMessage(r.Msg); err != nil {
		return err
	}
	defer observe.WatchOpened()()
	return h.svc.WatchEvents(ctx, r.Msg, func(m *v1.WatchEventsResponse) error {
		// nil: headers only, the watch is established.
		return stream.Send(m)
	})
}

type usage struct{ svc *events.Service }

var _ computev1connect.UsageServiceHandler = usage{}

func (h usage) ListUsage(ctx context.Context, r *connect.Request[v1.ListUsageRequest]) (*connect.Response[v1.ListUsageResponse], error) {
	recs, totals, next, err := h.svc.ListUsagePage(ctx, r.Msg)
	return reply(&v1.ListUsageResponse{Records: recs, Totals: totals, NextPageToken: next}, err)
}
