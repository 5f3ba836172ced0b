package server

import (
	"context"

	"connectrpc.com/connect"

	"better-compute.dev/compute/core/metal"
	v1 "better-compute.dev/compute/gen/go/bettercompute/compute/v1"
	"better-compute.dev/compute/gen/go/bettercompute/compute/v1/computev1connect"
)

// metal serves MetalService: decode, call core (which authorizes and records the move), reply
// with the node's metal view.
type metalService struct{ svc *metal.Service }

var _ computev1connect.MetalServiceHandler = metalService{}

func (h metalService) EnrollNode(ctx context.Context, r *connect.Request[v1.EnrollNodeRequest]) (*connect.Response[v1.EnrollNodeResponse], error) {
	n, err := h.svc.EnrollNode(ctx, r.Msg)
	return reply(&v1.EnrollNodeResponse{Node: n}, err)
}

func (h metalService) GetNode(ctx context.Context, r *connect.Request[v1.GetNodeRequest]) (*connect.Response[v1.GetNodeResponse], error) {
	n, err := h.svc.GetNode(ctx, r.Msg)
	return reply(&v1.GetNodeResponse{Node: n}, err)
}

func (h metalService) ListNodes(ctx context.Context, r *connect.Request[v1.ListNodesRequest]) (*connect.Response[v1.ListNodesResponse], error) {
	ns, next, err := h.svc.ListNodesPage(ctx, r.Msg)
	return reply(&v1.ListNodesResponse{Nodes: ns, NextPageToken: next}, err)
}

func (h metalService) InspectNode(ctx context.Context, r *connect.Request[v1.InspectNodeRequest]) (*connect.Response[v1.InspectNodeResponse], error) {
	n, err := h.svc.InspectNode(ctx, r.Msg)
	return reply(&v1.InspectNodeResponse{Node: n}, err)
}

func (h metalService) CommissionNode(ctx context.Context, r *connect.Request[v1.CommissionNodeRequest]) (*connect.Response[v1.CommissionNodeResponse], error) {
	n, err := h.svc.CommissionNode(ctx, r.Msg)
	return reply(&v1.CommissionNodeResponse{Node: n}, err)
}

func (h metalService) DeployNode(ctx context.Context, r *connect.Request[v1.DeployNodeRequest]) (*connect.Response[v1.DeployNodeResponse], error) {
	n, err := h.svc.DeployNode(ctx, r.Msg)
	return reply(&v1.DeployNodeResponse{Node: n}, err)
}

func (h metalService) RescueNode(ctx context.Context, r *connect.Request[v1.RescueNodeRequest]) (*connect.Response[v1.RescueNodeResponse], error) {
	n, err := h.svc.RescueNode(ctx, r.Msg)
	return reply(&v1.RescueNodeResponse{Node: n}, err)
}

func (h metalService) UnrescueNode(ctx context.Context, r *connect.Request[v1.UnrescueNodeRequest]) (*connect.Response[v1.UnrescueNodeResponse], error) {
	n, err := h.svc.UnrescueNode(ctx, r.Msg)
	return reply(&v1.UnrescueNodeResponse{Node: n}, err)
}

func (h metalService) ReleaseNode(ctx context.Context, r *connect.Request[v1.ReleaseNodeRequest]) (*connect.Response[v1.ReleaseNodeResponse], error) {
	n, err := h.svc.ReleaseNode(ctx, r.Msg)
	return reply(&v1.ReleaseNodeResponse{Node: n}, err)
}

func (h metalService) RetireNode(ctx context.Context, r *connect.Request[v1.RetireNodeRequest]) (*connect.Response[v1.RetireNodeResponse], error) {
	n, err := h.svc.RetireNode(ctx, r.Msg)
	return reply(&v1.RetireNodeResponse{Node: n}, err)
}

func (h metalService) AbortNode(ctx context.Context, r *connect.Request[v1.AbortNodeRequest]) (*connect.Response[v1.AbortNodeResponse], error) {
	n, err := h.svc.AbortNode(ctx, r.Msg)
	return reply(&v1.AbortNodeResponse{Node: n}, err)
}

func (h metalService) UpdateNodeCredentials(ctx context.Context, r *connect.Request[v1.UpdateNodeCredentialsRequest]) (*connect.Response[v1.UpdateNodeCredentialsResponse], error) {
	n, err := h.svc.UpdateNodeCredentials(ctx, r.Msg)
	return reply(&v1.UpdateNodeCredentialsResponse{Node: n}, err)
}
