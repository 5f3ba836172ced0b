package server

import (
	"context"

	"connectrpc.com/connect"

	"better-compute.dev/compute/core/pools"
	"better-compute.dev/compute/core/tenancy"
	v1 "better-compute.dev/compute/gen/go/bettercompute/compute/v1"
	"better-compute.dev/compute/gen/go/bettercompute/compute/v1/computev1connect"
)

type tenants struct{ svc *tenancy.Service }

var _ computev1connect.TenantServiceHandler = tenants{}

func (h tenants) CreateTenant(ctx context.Context, r *connect.Request[v1.CreateTenantRequest]) (*connect.Response[v1.CreateTenantResponse], error) {
	t, err := h.svc.CreateTenant(ctx, r.Msg)
	return reply(&v1.CreateTenantResponse{Tenant: t}, err)
}

func (h tenants) GetTenant(ctx context.Context, r *connect.Request[v1.GetTenantRequest]) (*connect.Response[v1.GetTenantResponse], error) {
	t, err := h.svc.GetTenant(ctx, r.Msg)
	return reply(&v1.GetTenantResponse{Tenant: t}, err)
}

func (h tenants) ListTenants(ctx context.Context, r *connect.Request[v1.ListTenantsRequest]) (*connect.Response[v1.ListTenantsResponse], error) {
	ts, next, err := h.svc.ListTenantsPage(ctx, r.Msg)
	return reply(&v1.ListTenantsResponse{Tenants: ts, NextPageToken: next}, err)
}

func (h tenants) CreatePrincipal(ctx context.Context, r *connect.Request[v1.CreatePrincipalRequest]) (*connect.Response[v1.CreatePrincipalResponse], error) {
	p, err := h.svc.CreatePrincipal(ctx, r.Msg)
	return reply(&v1.CreatePrincipalResponse{Principal: p}, err)
}

func (h tenants) ListPrincipals(ctx context.Context, r *connect.Request[v1.ListPrincipalsRequest]) (*connect.Response[v1.ListPrincipalsResponse], error) {
	ps, next, err := h.svc.ListPrincipalsPage(ctx, r.Msg)
	return reply(&v1.ListPrincipalsResponse{Principals: ps, NextPageToken: next}, err)
}

func (h tenants) CreateToken(ctx context.Context, r *connect.Request[v1.CreateTokenRequest]) (*connect.Response[v1.CreateTokenResponse], error) {
	t, secret, err := h.svc.CreateToken(ctx, r.Msg)
	return reply(&v1.CreateTokenResponse{Token: t, Secret: secret}, err)
}

func (h tenants) RevokeToken(ctx context.Context, r *connect.Request[v1.RevokeTokenRequest]) (*connect.Response[v1.RevokeTokenResponse], error) {
	t, err := h.svc.RevokeToken(ctx, r.Msg)
	return reply(&v1.RevokeTokenResponse{Token: t}, err)
}

func (h tenants) GrantRole(ctx context.Context, r *connect.Request[v1.GrantRoleRequest]) (*connect.Response[v1.GrantRoleResponse], error) {
	return reply(&v1.GrantRoleResponse{}, h.svc.GrantRole(ctx, r.Msg))
}

func (h tenants) RevokeRole(ctx context.Context, r *connect.Request[v1.RevokeRoleRequest]) (*connect.Response[v1.RevokeRoleResponse], error) {
	return reply(&v1.RevokeRoleResponse{}, h.svc.RevokeRole(ctx, r.Msg.GetGrant()))
}

type projects struct{ svc *tenancy.Service }

var _ computev1connect.ProjectServiceHandler = projects{}

func (h projects) CreateProject(ctx context.Context, r *connect.Request[v1.CreateProjectRequest]) (*connect.Response[v1.CreateProjectResponse], error) {
	p, err := h.svc.CreateProject(ctx, r.Msg)
	return reply(&v1.CreateProjectResponse{Project: p}, err)
}

func (h projects) GetProject(ctx context.Context, r *connect.Request[v1.GetProjectRequest]) (*connect.Response[v1.GetProjectResponse], error) {
	p, err := h.svc.GetProject(ctx, r.Msg)
	return reply(&v1.GetProjectResponse{Project: p}, err)
}

func (h projects) ListProjects(ctx context.Context, r *connect.Request[v1.ListProjectsRequest]) (*connect.Response[v1.ListProjectsResponse], error) {
	ps, next, err := h.svc.ListProjectsPage(ctx, r.Msg)
	return reply(&v1.ListProjectsResponse{Projects: ps, NextPageToken: next}, err)
}

type accounts struct{ svc *tenancy.Service }

var _ computev1connect.ProviderAccountServiceHandler = accounts{}

func (h accounts) CreateProviderAccount(ctx context.Context, r *connect.Request[v1.CreateProviderAccountRequest]) (*connect.Response[v1.CreateProviderAccountResponse], error) {
	a, err := h.svc.CreateProviderAccount(ctx, r.Msg)
	return reply(&v1.CreateProviderAccountResponse{Account: a}, err)
}

func (h accounts) GetProviderAccount(ctx context.Context, r *connect.Request[v1.GetProviderAccountRequest]) (*connect.Response[v1.GetProviderAccountResponse], error) {
	a, err := h.svc.GetProviderAccount(ctx, r.Msg)
	return reply(&v1.GetProviderAccountResponse{Account: a}, err)
}

func (h accounts) ListProviderAccounts(ctx context.Context, r *connect.Request[v1.ListProviderAccountsRequest]) (*connect.Response[v1.ListProviderAccountsResponse], error) {
	as, next, err := h.svc.ListProviderAccountsPage(ctx, r.Msg)
	return reply(&v1.ListProviderAccountsResponse{Accounts: as, NextPageToken: next}, err)
}

type poolService struct{ svc *pools.Service }

var _ computev1connect.PoolServiceHandler = poolService{}

func (h poolService) CreatePool(ctx context.Context, r *connect.Request[v1.CreatePoolRequest]) (*connect.Response[v1.CreatePoolResponse], error) {
	p, err := h.svc.CreatePool(ctx, r.Msg)
	return reply(&v1.CreatePoolResponse{Pool: p}, err)
}

func (h poolService) GetPool(ctx context.Context, r *connect.Request[v1.GetPoolRequest]) (*connect.Response[v1.GetPoolResponse], error) {
	p, err := h.svc.GetPool(ctx, r.Msg)
	return reply(&v1.GetPoolResponse{Pool: p}, err)
}

func (h poolService) ListPools(ctx context.Context, r *connect.Request[v1.ListPoolsRequest]) (*connect.Response[v1.ListPoolsResponse], error) {
	ps, next, err := h.svc.ListPoolsPage(ctx, r.Msg)
	return reply(&v1.ListPoolsResponse{Pools: ps, NextPageToken: next}, err)
}

func (h poolService) UpdatePool(ctx context.Context, r *connect.Request[v1.UpdatePoolRequest]) (*connect.Response[v1.UpdatePoolResponse], error) {
	p, err := h.svc.UpdatePool(ctx, r.Msg)
	return reply(&v1.UpdatePoolResponse{Pool: p}, err)
}

func (h poolService) ArchivePool(ctx context.Context, r *connect.Request[v1.ArchivePoolRequest]) (*connect.Response[v1.ArchivePoolResponse], error) {
	p, err := h.svc.ArchivePool(ctx, r.Msg)
	return reply(&v1.ArchivePoolResponse{Pool: p}, err)
}

func (h poolService) SetQuota(ctx context.Context, r *connect.Request[v1.SetQuotaRequest]) (*connect.Response[v1.SetQuotaResponse], error) {
	q, err := h.svc.SetQuota(ctx, r.Msg)
	return reply(&v1.SetQuotaResponse{Quota: q}, err)
}

func (h poolService) ListQuotas(ctx context.Context, r *connect.Request[v1.ListQuotasRequest]) (*connect.Response[v1.ListQuotasResponse], error) {
	qs, next, err := h.svc.ListQuotasPage(ctx, r.Msg)
	return reply(&v1.ListQuotasResponse{Quotas: qs, NextPageToken: next}, err)
}
