package server

import (
	"context"
	"time"

	"connectrpc.com/connect"

	"better-compute.dev/compute/core/substrates"
	v1 "better-compute.dev/compute/gen/go/bettercompute/compute/v1"
	"better-compute.dev/compute/gen/go/bettercompute/compute/v1/computev1connect"
)

// substrates serves SubstrateService: read-only, since a pool's policy drives its substrate.
type substrateService struct{ svc *substrates.Service }

var _ computev1connect.SubstrateServiceHandler = substrateService{}

func (h substrateService) GetSubstrate(ctx context.Context, r *connect.Request[v1.GetSubstrateRequest]) (*connect.Response[v1.GetSubstrateResponse], error) {
	sub, err := h.svc.GetSubstrate(ctx, r.Msg)
	return reply(&v1.GetSubstrateResponse{Substrate: sub}, err)
}

func (h substrateService) ListSubstrates(ctx context.Context, r *connect.Request[v1.ListSubstratesRequest]) (*connect.Response[v1.ListSubstratesResponse], error) {
	subs, next, err := h.svc.ListSubstratesPage(ctx, r.Msg)
	return reply(&v1.ListSubstratesResponse{Substrates: subs, NextPageToken: next}, err)
}

// substrateJoin serves SubstrateJoinService. It is mounted without the bearer-token
// interceptor (bcd has no principal; the join token in the request is its credential), so it
// validates the request itself and records metrics and hidden causes as the interceptor would.
type substrateJoin struct {
	svc *substrates.Service
	ic  *edge
}

var _ computev1connect.SubstrateJoinServiceHandler = substrateJoin{}

func (h substrateJoin) JoinNode(ctx context.Context, r *connect.Request[v1.JoinNodeRequest]) (resp *connect.Response[v1.JoinNodeResponse], err error) {
	start := time.Now()
	procedure := r.Spec().Procedure
	defer func() { h.ic.observe(ctx, procedure, start, err) }()
	if err := h.ic.validateMessage(r.Msg); err != nil {
		return nil, err
	}
	out, err := h.svc.JoinNode(ctx, r.Msg)
	if err != nil {
		h.ic.logCause(ctx, procedure, err)
		return nil, toConnect(err)
	}
	return connect.NewResponse(out), nil
}
