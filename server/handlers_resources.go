package server

import (
	"context"

	"connectrpc.com/connect"

	"better-compute.dev/compute/core/resources"
	v1 "better-compute.dev/compute/gen/go/bettercompute/compute/v1"
	"better-compute.dev/compute/gen/go/bettercompute/compute/v1/computev1connect"
)

type networks struct{ svc *resources.Service }

var _ computev1connect.NetworkServiceHandler = networks{}

func (h networks) CreateNetwork(ctx context.Context, r *connect.Request[v1.CreateNetworkRequest]) (*connect.Response[v1.CreateNetworkResponse], error) {
	n, err := h.svc.CreateNetwork(ctx, r.Msg)
	return reply(&v1.CreateNetworkResponse{Network: n}, err)
}

func (h networks) GetNetwork(ctx context.Context, r *connect.Request[v1.GetNetworkRequest]) (*connect.Response[v1.GetNetworkResponse], error) {
	n, err := h.svc.GetNetwork(ctx, r.Msg)
	return reply(&v1.GetNetworkResponse{Network: n}, err)
}

func (h networks) ListNetworks(ctx context.Context, r *connect.Request[v1.ListNetworksRequest]) (*connect.Response[v1.ListNetworksResponse], error) {
	ns, next, err := h.svc.ListNetworksPage(ctx, r.Msg)
	return reply(&v1.ListNetworksResponse{Networks: ns, NextPageToken: next}, err)
}

func (h networks) CreateSubnet(ctx context.Context, r *connect.Request[v1.CreateSubnetRequest]) (*connect.Response[v1.CreateSubnetResponse], error) {
	s, err := h.svc.CreateSubnet(ctx, r.Msg)
	return reply(&v1.CreateSubnetResponse{Subnet: s}, err)
}

func (h networks) GetSubnet(ctx context.Context, r *connect.Request[v1.GetSubnetRequest]) (*connect.Response[v1.GetSubnetResponse], error) {
	s, err := h.svc.GetSubnet(ctx, r.Msg)
	return reply(&v1.GetSubnetResponse{Subnet: s}, err)
}

func (h networks) ListSubnets(ctx context.Context, r *connect.Request[v1.ListSubnetsRequest]) (*connect.Response[v1.ListSubnetsResponse], error) {
	ss, next, err := h.svc.ListSubnetsPage(ctx, r.Msg)
	return reply(&v1.ListSubnetsResponse{Subnets: ss, NextPageToken: next}, err)
}

func (h networks) DeleteSubnet(ctx context.Context, r *connect.Request[v1.DeleteSubnetRequest]) (*connect.Response[v1.DeleteSubnetResponse], error) {
	s, err := h.svc.DeleteSubnet(ctx, r.Msg)
	return reply(&v1.DeleteSubnetResponse{Subnet: s}, err)
}

type certificates struct{ svc *resources.Service }

var _ computev1connect.CertificateServiceHandler = certificates{}

func (h certificates) CreateCertificate(ctx context.Context, r *connect.Request[v1.CreateCertificateRequest]) (*connect.Response[v1.CreateCertificateResponse], error) {
	c, err := h.svc.CreateCertificate(ctx, r.Msg)
	return reply(&v1.CreateCertificateResponse{Certificate: c}, err)
}

func (h certificates) GetCertificate(ctx context.Context, r *connect.Request[v1.GetCertificateRequest]) (*connect.Response[v1.GetCertificateResponse], error) {
	c, err := h.svc.GetCertificate(ctx, r.Msg)
	return reply(&v1.GetCertificateResponse{Certificate: c}, err)
}

func (h certificates) ListCertificates(ctx context.Context, r *connect.Request[v1.ListCertificatesRequest]) (*connect.Response[v1.ListCertificatesResponse], error) {
	cs, next, err := h.svc.ListCertificatesPage(ctx, r.Msg)
	return reply(&v1.ListCertificatesResponse{Certificates: cs, NextPageToken: next}, err)
}

func (h certificates) DeleteCertificate(ctx context.Context, r *connect.Request[v1.DeleteCertificateRequest]) (*connect.Response[v1.DeleteCertificateResponse], error) {
	c, err := h.svc.DeleteCertificate(ctx, r.Msg)
	return reply(&v1.DeleteCertificateResponse{Certificate: c}, err)
}

type instances struct{ svc *resources.Service }

var _ computev1connect.InstanceServiceHandler = instances{}

func (h instances) CreateInstance(ctx context.Context, r *connect.Request[v1.CreateInstanceRequest]) (*connect.Response[v1.CreateInstanceResponse], error) {
	i, err := h.svc.CreateInstance(ctx, r.Msg)
	return reply(&v1.CreateInstanceResponse{Instance: i}, err)
}

func (h instances) GetInstance(ctx context.Context, r *connect.Request[v1.GetInstanceRequest]) (*connect.Response[v1.GetInstanceResponse], error) {
	i, err := h.svc.GetInstance(ctx, r.Msg)
	return reply(&v1.GetInstanceResponse{Instance: i}, err)
}

func (h instances) ListInstances(ctx context.Context, r *connect.Request[v1.ListInstancesRequest]) (*connect.Response[v1.ListInstancesResponse], error) {
	is, next, err := h.svc.ListInstancesPage(ctx, r.Msg)
	return reply(&v1.ListInstancesResponse{Instances: is, NextPageToken: next}, err)
}

func (h instances) DeleteInstance(ctx context.Context, r *connect.Request[v1.DeleteInstanceRequest]) (*connect.Response[v1.DeleteInstanceResponse], error) {
	i, err := h.svc.DeleteInstance(ctx, r.Msg)
	return reply(&v1.DeleteInstanceResponse{Instance: i}, err)
}
