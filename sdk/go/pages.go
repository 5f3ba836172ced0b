package sdk

import (
	"context"
	"iter"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	v1 "better-compute.dev/compute/gen/go/bettercompute/compute/v1"
	c "better-compute.dev/compute/gen/go/bettercompute/compute/v1/computev1connect"
)

// Pages walks every page of a list: it calls list with req, yields each item items picks from
// the answer, and calls again with the answer's next_page_token until there is none. An error
// is yielded once, as the last pair. req is copied, never changed. Any list request with
// page_token and any answer with next_page_token fit:
//
//	for lb, err := range sdk.Pages(ctx, &v1.ListLoadBalancersRequest{TenantId: t, PageSize: 200},
//		client.LoadBalancers.ListLoadBalancers, (*v1.ListLoadBalancersResponse).GetLoadBalancers) { ... }
func Pages[Req, Resp any, PReq interface {
	*Req
	proto.Message
}, PResp interface {
	*Resp
	proto.Message
}, Item any](ctx context.Context, req PReq,
	list func(context.Context, *connect.Request[Req]) (*connect.Response[Resp], error),
	items func(PResp) []Item) iter.Seq2[Item, error] {
	return func(yield func(Item, error) bool) {
		next := proto.Clone(req).(PReq)
		for {
			resp, err := list(ctx, connect.NewRequest((*Req)(next)))
			if err != nil {
				var zero Item
				yield(zero, err)
				return
			}
			msg := PResp(resp.Msg)
			for _, it := range items(msg) {
				if !yield(it, nil) {
					return
				}
			}
			token := stringField(msg, "next_page_token")
			if token == "" {
				return
			}
			next = proto.Clone(next).(PReq)
			setStringField(next, "page_token", token)
		}
	}
}

// LoadBalancerPages is Pages over loadBalancers/list.
func LoadBalancerPages(ctx context.Context, cl c.LoadBalancerServiceClient, req *v1.ListLoadBalancersRequest) iter.Seq2[*v1.LoadBalancer, error] {
	return Pages(ctx, req, cl.ListLoadBalancers, (*v1.ListLoadBalancersResponse).GetLoadBalancers)
}

// InstancePages is Pages over instances/list.
func InstancePages(ctx context.Context, cl c.InstanceServiceClient, req *v1.ListInstancesRequest) iter.Seq2[*v1.Instance, error] {
	return Pages(ctx, req, cl.ListInstances, (*v1.ListInstancesResponse).GetInstances)
}

// NetworkPages is Pages over networks/list.
func NetworkPages(ctx context.Context, cl c.NetworkServiceClient, req *v1.ListNetworksRequest) iter.Seq2[*v1.Network, error] {
	return Pages(ctx, req, cl.ListNetworks, (*v1.ListNetworksResponse).GetNetworks)
}

// SubnetPages is Pages over subnets/list.
func SubnetPages(ctx context.Context, cl c.NetworkServiceClient, req *v1.ListSubnetsRequest) iter.Seq2[*v1.Subnet, error] {
	return Pages(ctx, req, cl.ListSubnets, (*v1.ListSubnetsResponse).GetSubnets)
}

// CertificatePages is Pages over certificates/list.
func CertificatePages(ctx context.Context, cl c.CertificateServiceClient, req *v1.ListCertificatesRequest) iter.Seq2[*v1.Certificate, error] {
	return Pages(ctx, req, cl.ListCertificates, (*v1.ListCertificatesResponse).GetCertificates)
}

// ProviderAccountPages is Pages over providerAccounts/list.
func ProviderAccountPages(ctx context.Context, cl c.ProviderAccountServiceClient, req *v1.ListProviderAccountsRequest) iter.Seq2[*v1.ProviderAccount, error] {
	return Pages(ctx, req, cl.ListProviderAccounts, (*v1.ListProviderAccountsResponse).GetAccounts)
}

// PoolPages is Pages over pools/list.
func PoolPages(ctx context.Context, cl c.PoolServiceClient, req *v1.ListPoolsRequest) iter.Seq2[*v1.Pool, error] {
	return Pages(ctx, req, cl.ListPools, (*v1.ListPoolsResponse).GetPools)
}

// QuotaPages is Pages over quotas/list.
func QuotaPages(ctx context.Context, cl c.PoolServiceClient, req *v1.ListQuotasRequest) iter.Seq2[*v1.Quota, error] {
	return Pages(ctx, req, cl.ListQuotas, (*v1.ListQuotasResponse).GetQuotas)
}

// SubstratePages is Pages over substrates/list.
func SubstratePages(ctx context.Context, cl c.SubstrateServiceClient, req *v1.ListSubstratesRequest) iter.Seq2[*v1.Substrate, error] {
	return Pages(ctx, req, cl.ListSubstrates, (*v1.ListSubstratesResponse).GetSubstrates)
}

// NodePages is Pages over metal/list.
func NodePages(ctx context.Context, cl c.MetalServiceClient, req *v1.ListNodesRequest) iter.Seq2[*v1.MetalNode, error] {
	return Pages(ctx, req, cl.ListNodes, (*v1.ListNodesResponse).GetNodes)
}

// TenantPages is Pages over tenants/list.
func TenantPages(ctx context.Context, cl c.TenantServiceClient, req *v1.ListTenantsRequest) iter.Seq2[*v1.Tenant, error] {
	return Pages(ctx, req, cl.ListTenants, (*v1.ListTenantsResponse).GetTenants)
}

// PrincipalPages is Pages over principals/list.
func PrincipalPages(ctx context.Context, cl c.TenantServiceClient, req *v1.ListPrincipalsRequest) iter.Seq2[*v1.Principal, error] {
	return Pages(ctx, req, cl.ListPrincipals, (*v1.ListPrincipalsResponse).GetPrincipals)
}

// ProjectPages is Pages over projects/list.
func ProjectPages(ctx context.Context, cl c.ProjectServiceClient, req *v1.ListProjectsRequest) iter.Seq2[*v1.Project, error] {
	return Pages(ctx, req, cl.ListProjects, (*v1.ListProjectsResponse).GetProjects)
}

// UsagePages is Pages over usage/list (records only: totals are per page).
func UsagePages(ctx context.Context, cl c.UsageServiceClient, req *v1.ListUsageRequest) iter.Seq2[*v1.UsageRecord, error] {
	return Pages(ctx, req, cl.ListUsage, (*v1.ListUsageResponse).GetRecords)
}

func stringField(m proto.Message, name protoreflect.Name) string {
	r := m.ProtoReflect()
	if fd := r.Descriptor().Fields().ByName(name); fd != nil && fd.Kind() == protoreflect.StringKind {
		return r.Get(fd).String()
	}
	return ""
}

func setStringField(m proto.Message, name protoreflect.Name, v string) {
	r := m.ProtoReflect()
	if fd := r.Descriptor().Fields().ByName(name); fd != nil && fd.Kind() == protoreflect.StringKind {
		r.Set(fd, protoreflect.ValueOfString(v))
	}
}
