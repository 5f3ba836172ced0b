package core_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"better-compute.dev/compute/apierr"
	"better-compute.dev/compute/app/apptest"
	"better-compute.dev/compute/authz"
	"better-compute.dev/compute/core"
	"better-compute.dev/compute/core/events"
	v1 "better-compute.dev/compute/gen/go/bettercompute/compute/v1"
	"better-compute.dev/compute/gen/go/bettercompute/compute/v1/computev1connect"
	"better-compute.dev/compute/gen/go/bettercompute/compute/v1/errcode"
	"better-compute.dev/compute/server"
	"google.golang.org/protobuf/proto"
)

// objects of one tenant that the matrix acts on.
type objects struct {
	tenant                                   string
	lb, instance, subnet, network, cert, prj string
	substratePool, substrate                 string
	account, pool, node                      string
}

func makeObjects(t *testing.T, s *apptest.Stack, tn apptest.Tenant) objects {
	t.Helper()
	svc := s.App
	o := objects{tenant: tn.ID}
	lb, err := svc.LoadBalancers.CreateLoadBalancer(tn.Ctx, apptest.LoadBalancerRequest(tn, apptest.PoolTargets()))
	if err != nil {
		t.Fatal(err)
	}
	o.lb = lb.GetId()
	o.instance = s.MachineInstance(t, tn, "nyc3", "").GetId()
	o.subnet = s.Subnet(t, tn, "sfo3", "10.9.0.0/24")
	sn, _ := svc.Resources.GetSubnet(tn.Ctx, &v1.GetSubnetRequest{TenantId: tn.ID, SubnetId: o.subnet})
	o.network = sn.GetNetworkId()
	o.cert = s.Certificate(t, tn, tn.AccountID)
	p, err := svc.Tenancy.CreateProject(tn.Ctx, &v1.CreateProjectRequest{TenantId: tn.ID, Name: "p" + tn.ID})
	if err != nil {
		t.Fatal(err)
	}
	o.prj = p.GetId()
	pool, err := svc.Pools.CreatePool(s.AdminCtx, &v1.CreatePoolRequest{TenantId: tn.ID, AccountId: tn.AccountID, Name: "k8s", Regions: []string{"nyc3"},
		Policy: &v1.PoolPolicy{Substrate: &v1.PoolSubstrate{Kind: "kubernetes", Account: tn.AccountID,
			Cluster: &v1.SubstrateCluster{Mode: &v1.SubstrateCluster_Adopt{Adopt: &v1.ClusterAdopt{Id: "cluster-1"}}}}}})
	if err != nil {
		t.Fatal(err)
	}
	sub, err := svc.Substrates.GetSubstrate(s.AdminCtx, &v1.GetSubstrateRequest{TenantId: tn.ID, PoolId: pool.GetId()})
	if err != nil {
		t.Fatal(err)
	}
	o.substratePool, o.substrate = pool.GetId(), sub.GetId()
	o.account, o.pool = tn.AccountID, tn.PoolID
	// An address that does not resolve is accepted at enrollment; nothing here reaches a BMC.
	node, err := svc.Metal.EnrollNode(tn.Ctx, &v1.EnrollNodeRequest{TenantId: tn.ID, Name: "n" + tn.ID, Bmc: &v1.MetalBmcSettings{
		Address: "bmc-" + tn.ID + ".invalid", Protocol: "redfish", Username: "admin", Password: "bmc-Pa55-matrix", InsecureTls: true}})
	if err != nil {
		t.Fatal(err)
	}
	o.node = node.GetId()
	return o
}

// method is one API method: its JSON route (or procedure, for a stream), the object type it
// checks (TypeTenant for list, create and the platform surface), and the call against a tenant id
// and that tenant's objects. The permission it needs is the procedure's (access) option
// (permClass): the matrix checks core against that one table.
type method struct {
	name   string
	typ    string
	object func(o objects) string
	call   func(ctx context.Context, tenant string, o objects) error
}

// pastAuth reads an error that can only come after authorization passed (the request's made-up
// references, a move the node's state refuses) as success.
func pastAuth(err error) error {
	switch apierr.CodeOf(err) {
	case errcode.InvalidInput, errcode.InvalidState:
		return nil
	}
	return err
}

// tenantPastAuth is pastAuth for calls checked on the tenant, whose refusal is ACCESS_DENIED:
// a NOT_FOUND there is a made-up reference looked up after the check.
func tenantPastAuth(err error) error {
	if apierr.CodeOf(err) == errcode.NotFound {
		return nil
	}
	return pastAuth(err)
}

// errStop ends a watch once it has begun.
var errStop = errors.New("matrix: stop watching")

// matrixMethods lists every bearer-authorized procedure (TestMatrixCoversEveryProcedure), calling
// svc; svc may be nil to read the names only.
func matrixMethods(svc server.Services) []method {
	const made = "made-up"
	return []method{
		{"loadBalancers/get", authz.TypeProviderLoadBalancer, func(o objects) string { return o.lb }, func(ctx context.Context, tn string, o objects) error {
			_, err := svc.LoadBalancers.GetLoadBalancer(ctx, &v1.GetLoadBalancerRequest{TenantId: tn, LoadBalancerId: o.lb})
			return err
		}},
		{"loadBalancers/update", authz.TypeProviderLoadBalancer, func(o objects) string { return o.lb }, func(ctx context.Context, tn string, o objects) error {
			_, err := svc.LoadBalancers.UpdateLoadBalancer(ctx, &v1.UpdateLoadBalancerRequest{TenantId: tn, LoadBalancerId: o.lb, RedirectHttpToHttps: proto.Bool(true)})
			return err
		}},
		{"loadBalancers/delete", authz.TypeProviderLoadBalancer, func(o objects) string { return o.lb }, func(ctx context.Context, tn string, o objects) error {
			_, err := svc.LoadBalancers.DeleteLoadBalancer(ctx, &v1.DeleteLoadBalancerRequest{TenantId: tn, LoadBalancerId: o.lb})
			return err
		}},
		{"loadBalancers/list", authz.TypeTenant, nil, func(ctx context.Context, tn string, o objects) error {
			_, err := svc.LoadBalancers.ListLoadBalancers(ctx, &v1.ListLoadBalancersRequest{TenantId: tn})
			return err
		}},
		{"loadBalancers/create", authz.TypeTenant, nil, func(ctx context.Context, tn string, o objects) error {
			r := &v1.CreateLoadBalancerRequest{TenantId: tn, PoolId: "pool_01m8vjp5r2ph80akzhx2janz7c", Name: "x", Region: "nyc3",
				Targets: apptest.PoolTargets(), Forwarding: apptest.HTTPRule(), IdempotencyKey: apptest.NewKey()}
			_, err := svc.LoadBalancers.CreateLoadBalancer(ctx, r)
			return tenantPastAuth(err) // authorized; the made-up pool is then not found
		}},
		{"instances/get", authz.TypeInstance, func(o objects) string { return o.instance }, func(ctx context.Context, tn string, o objects) error {
			_, err := svc.Resources.GetInstance(ctx, &v1.GetInstanceRequest{TenantId: tn, InstanceId: o.instance})
			return err
		}},
		{"instances/list", authz.TypeTenant, nil, func(ctx context.Context, tn string, o objects) error {
			_, err := svc.Resources.ListInstances(ctx, &v1.ListInstancesRequest{TenantId: tn})
			return err
		}},
		{"subnets/get", authz.TypeSubnet, func(o objects) string { return o.subnet }, func(ctx context.Context, tn string, o objects) error {
			_, err := svc.Resources.GetSubnet(ctx, &v1.GetSubnetRequest{TenantId: tn, SubnetId: o.subnet})
			return err
		}},
		{"networks/get", authz.TypeNetwork, func(o objects) string { return o.network }, func(ctx context.Context, tn string, o objects) error {
			_, err := svc.Resources.GetNetwork(ctx, &v1.GetNetworkRequest{TenantId: tn, NetworkId: o.network})
			return err
		}},
		{"certificates/get", authz.TypeCertificate, func(o objects) string { return o.cert }, func(ctx context.Context, tn string, o objects) error {
			_, err := svc.Resources.GetCertificate(ctx, &v1.GetCertificateRequest{TenantId: tn, CertificateId: o.cert})
			return err
		}},
		{"projects/get", authz.TypeProject, func(o objects) string { return o.prj }, func(ctx context.Context, tn string, o objects) error {
			_, err := svc.Tenancy.GetProject(ctx, &v1.GetProjectRequest{TenantId: tn, ProjectId: o.prj})
			return err
		}},
		{"substrates/get", authz.TypePoolSubstrate, func(o objects) string { return o.substrate }, func(ctx context.Context, tn string, o objects) error {
			_, err := svc.Substrates.GetSubstrate(ctx, &v1.GetSubstrateRequest{TenantId: tn, PoolId: o.substratePool})
			return err
		}},
		{"substrates/list", authz.TypeTenant, nil, func(ctx context.Context, tn string, o objects) error {
			_, err := svc.Substrates.ListSubstrates(ctx, &v1.ListSubstratesRequest{TenantId: tn})
			return err
		}},
		{"events/list", authz.TypeTenant, nil, func(ctx context.Context, tn string, o objects) error {
			_, _, err := svc.Events.ListEvents(ctx, &v1.ListEventsRequest{TenantId: tn})
			return err
		}},
		{"usage/list", authz.TypeTenant, nil, func(ctx context.Context, tn string, o objects) error {
			_, _, err := svc.Events.ListUsage(ctx, &v1.ListUsageRequest{TenantId: tn})
			return err
		}},
		{"principals/list", authz.TypeTenant, nil, func(ctx context.Context, tn string, o objects) error {
			_, err := svc.Tenancy.ListPrincipals(ctx, &v1.ListPrincipalsRequest{TenantId: tn})
			return err
		}},
		{"instances/create", authz.TypeTenant, nil, func(ctx context.Context, tn string, o objects) error {
			_, err := svc.Resources.CreateInstance(ctx, &v1.CreateInstanceRequest{TenantId: tn, PoolId: o.pool, Name: "vm2", Region: "nyc3", Flavor: "small"})
			return tenantPastAuth(err)
		}},
		{"networks/create", authz.TypeTenant, nil, func(ctx context.Context, tn string, o objects) error {
			_, err := svc.Resources.CreateNetwork(ctx, &v1.CreateNetworkRequest{TenantId: tn, AccountId: o.account, Name: "net-" + apptest.NewKey()})
			return tenantPastAuth(err)
		}},
		{"networks/list", authz.TypeTenant, nil, func(ctx context.Context, tn string, o objects) error {
			_, err := svc.Resources.ListNetworks(ctx, &v1.ListNetworksRequest{TenantId: tn})
			return err
		}},
		{"subnets/create", authz.TypeTenant, nil, func(ctx context.Context, tn string, o objects) error {
			_, err := svc.Resources.CreateSubnet(ctx, &v1.CreateSubnetRequest{TenantId: tn, NetworkId: o.network, Name: "s2", Region: "nyc3", IpRange: "10.8.0.0/24"})
			return tenantPastAuth(err)
		}},
		{"subnets/list", authz.TypeTenant, nil, func(ctx context.Context, tn string, o objects) error {
			_, err := svc.Resources.ListSubnets(ctx, &v1.ListSubnetsRequest{TenantId: tn})
			return err
		}},
		{"certificates/create", authz.TypeTenant, nil, func(ctx context.Context, tn string, o objects) error {
			_, err := svc.Resources.CreateCertificate(ctx, &v1.CreateCertificateRequest{TenantId: tn, AccountId: o.account, Name: "c-" + apptest.NewKey(),
				Source: &v1.CreateCertificateRequest_Managed{Managed: &v1.ManagedCertificate{DnsNames: []string{"www.example.com"}}}})
			return tenantPastAuth(err)
		}},
		{"certificates/list", authz.TypeTenant, nil, func(ctx context.Context, tn string, o objects) error {
			_, err := svc.Resources.ListCertificates(ctx, &v1.ListCertificatesRequest{TenantId: tn})
			return err
		}},
		{"projects/create", authz.TypeTenant, nil, func(ctx context.Context, tn string, o objects) error {
			_, err := svc.Tenancy.CreateProject(ctx, &v1.CreateProjectRequest{TenantId: tn, Name: "p-" + apptest.NewKey()})
			return tenantPastAuth(err)
		}},
		{"projects/list", authz.TypeTenant, nil, func(ctx context.Context, tn string, o objects) error {
			_, err := svc.Tenancy.ListProjects(ctx, &v1.ListProjectsRequest{TenantId: tn})
			return err
		}},
		{"providerAccounts/get", authz.TypeProviderAccount, func(o objects) string { return o.account }, func(ctx context.Context, tn string, o objects) error {
			_, err := svc.Tenancy.GetProviderAccount(ctx, &v1.GetProviderAccountRequest{TenantId: tn, AccountId: o.account})
			return err
		}},
		{"providerAccounts/list", authz.TypeTenant, nil, func(ctx context.Context, tn string, o objects) error {
			_, err := svc.Tenancy.ListProviderAccounts(ctx, &v1.ListProviderAccountsRequest{TenantId: tn})
			return err
		}},
		{"pools/get", authz.TypePool, func(o objects) string { return o.pool }, func(ctx context.Context, tn string, o objects) error {
			_, err := svc.Pools.GetPool(ctx, &v1.GetPoolRequest{TenantId: tn, PoolId: o.pool})
			return err
		}},
		{"pools/list", authz.TypeTenant, nil, func(ctx context.Context, tn string, o objects) error {
			_, err := svc.Pools.ListPools(ctx, &v1.ListPoolsRequest{TenantId: tn})
			return err
		}},
		{"quotas/list", authz.TypeTenant, nil, func(ctx context.Context, tn string, o objects) error {
			_, err := svc.Pools.ListQuotas(ctx, &v1.ListQuotasRequest{TenantId: tn})
			return err
		}},
		{"tenants/get", authz.TypeTenant, nil, func(ctx context.Context, tn string, o objects) error {
			_, err := svc.Tenancy.GetTenant(ctx, &v1.GetTenantRequest{TenantId: tn})
			return err
		}},
		{computev1connect.EventServiceWatchEventsProcedure, authz.TypeTenant, nil, func(ctx context.Context, tn string, o objects) error {
			err := svc.Events.WatchEvents(ctx, &v1.WatchEventsRequest{TenantId: tn}, func(*v1.WatchEventsResponse) error { return errStop })
			if errors.Is(err, errStop) { // the watch began: authorized
				return nil
			}
			return err
		}},
		// The tenant's administration: admins only.
		{"principals/create", authz.TypeTenant, nil, func(ctx context.Context, tn string, o objects) error {
			_, err := svc.Tenancy.CreatePrincipal(ctx, &v1.CreatePrincipalRequest{TenantId: tn, Kind: "serviceAccount", DisplayName: "robot"})
			return err
		}},
		{"tokens/create", authz.TypeTenant, nil, func(ctx context.Context, tn string, o objects) error {
			_, _, err := svc.Tenancy.CreateToken(ctx, &v1.CreateTokenRequest{TenantId: tn, PrincipalId: made})
			return tenantPastAuth(err)
		}},
		{"tokens/revoke", authz.TypeTenant, nil, func(ctx context.Context, tn string, o objects) error {
			_, err := svc.Tenancy.RevokeToken(ctx, &v1.RevokeTokenRequest{TenantId: tn, TokenId: made})
			return tenantPastAuth(err)
		}},
		{"roles/grant", authz.TypeTenant, nil, func(ctx context.Context, tn string, o objects) error {
			return tenantPastAuth(svc.Tenancy.GrantRole(ctx, &v1.GrantRoleRequest{TenantId: tn, PrincipalId: made, Role: "viewer"}))
		}},
		{"roles/revoke", authz.TypeTenant, nil, func(ctx context.Context, tn string, o objects) error {
			return tenantPastAuth(svc.Tenancy.RevokeRole(ctx, &v1.GrantRoleRequest{TenantId: tn, PrincipalId: made, Role: "viewer"}))
		}},
		// The platform surface: no tenant principal, not even a tenant admin, reaches it.
		{"tenants/create", authz.TypeTenant, nil, func(ctx context.Context, tn string, o objects) error {
			_, err := svc.Tenancy.CreateTenant(ctx, &v1.CreateTenantRequest{TenantId: "t-" + apptest.NewKey(), DisplayName: "t"})
			return err
		}},
		{"tenants/list", authz.TypeTenant, nil, func(ctx context.Context, tn string, o objects) error {
			_, _, err := svc.Tenancy.ListTenantsPage(ctx, &v1.ListTenantsRequest{})
			return err
		}},
		{"providerAccounts/create", authz.TypeTenant, nil, func(ctx context.Context, tn string, o objects) error {
			_, err := svc.Tenancy.CreateProviderAccount(ctx, &v1.CreateProviderAccountRequest{TenantId: tn, Kind: "digitalocean", Name: "x", Token: "do-token-x"})
			return err
		}},
		{"pools/create", authz.TypeTenant, nil, func(ctx context.Context, tn string, o objects) error {
			_, err := svc.Pools.CreatePool(ctx, &v1.CreatePoolRequest{TenantId: tn, AccountId: o.account, Name: "x", Regions: []string{"nyc3"}})
			return err
		}},
		{"pools/update", authz.TypeTenant, nil, func(ctx context.Context, tn string, o objects) error {
			_, err := svc.Pools.UpdatePool(ctx, &v1.UpdatePoolRequest{TenantId: tn, PoolId: o.pool, Policy: &v1.PoolPolicy{}})
			return err
		}},
		{"pools/archive", authz.TypeTenant, nil, func(ctx context.Context, tn string, o objects) error {
			_, err := svc.Pools.ArchivePool(ctx, &v1.ArchivePoolRequest{TenantId: tn, PoolId: o.pool})
			return err
		}},
		{"quotas/set", authz.TypeTenant, nil, func(ctx context.Context, tn string, o objects) error {
			_, err := svc.Pools.SetQuota(ctx, &v1.SetQuotaRequest{TenantId: tn, PoolId: o.pool, Resource: "loadBalancers", Limit: 1})
			return err
		}},
		// Metal: the node's own rows; a verb the node's state refuses was authorized.
		{"metal/get", authz.TypeMetalNode, func(o objects) string { return o.node }, func(ctx context.Context, tn string, o objects) error {
			_, err := svc.Metal.GetNode(ctx, &v1.GetNodeRequest{TenantId: tn, NodeId: o.node})
			return err
		}},
		{"metal/list", authz.TypeTenant, nil, func(ctx context.Context, tn string, o objects) error {
			_, err := svc.Metal.ListNodes(ctx, &v1.ListNodesRequest{TenantId: tn})
			return err
		}},
		{"metal/enroll", authz.TypeTenant, nil, func(ctx context.Context, tn string, o objects) error {
			_, err := svc.Metal.EnrollNode(ctx, &v1.EnrollNodeRequest{TenantId: tn, Name: "n-" + apptest.NewKey(), Bmc: &v1.MetalBmcSettings{
				Address: "bmc-2.invalid", Protocol: "redfish", Username: "admin", Password: "bmc-Pa55-matrix", InsecureTls: true}})
			return tenantPastAuth(err)
		}},
		{"metal/inspect", authz.TypeMetalNode, func(o objects) string { return o.node }, func(ctx context.Context, tn string, o objects) error {
			_, err := svc.Metal.InspectNode(ctx, &v1.InspectNodeRequest{TenantId: tn, NodeId: o.node})
			return pastAuth(err)
		}},
		{"metal/commission", authz.TypeMetalNode, func(o objects) string { return o.node }, func(ctx context.Context, tn string, o objects) error {
			_, err := svc.Metal.CommissionNode(ctx, &v1.CommissionNodeRequest{TenantId: tn, NodeId: o.node})
			return pastAuth(err)
		}},
		{"metal/deploy", authz.TypeMetalNode, func(o objects) string { return o.node }, func(ctx context.Context, tn string, o objects) error {
			_, err := svc.Metal.DeployNode(ctx, &v1.DeployNodeRequest{TenantId: tn, NodeId: o.node, Image: "ubuntu-24.04"})
			return pastAuth(err)
		}},
		{"metal/rescue", authz.TypeMetalNode, func(o objects) string { return o.node }, func(ctx context.Context, tn string, o objects) error {
			_, err := svc.Metal.RescueNode(ctx, &v1.RescueNodeRequest{TenantId: tn, NodeId: o.node})
			return pastAuth(err)
		}},
		{"metal/unrescue", authz.TypeMetalNode, func(o objects) string { return o.node }, func(ctx context.Context, tn string, o objects) error {
			_, err := svc.Metal.UnrescueNode(ctx, &v1.UnrescueNodeRequest{TenantId: tn, NodeId: o.node})
			return pastAuth(err)
		}},
		{"metal/release", authz.TypeMetalNode, func(o objects) string { return o.node }, func(ctx context.Context, tn string, o objects) error {
			_, err := svc.Metal.ReleaseNode(ctx, &v1.ReleaseNodeRequest{TenantId: tn, NodeId: o.node})
			return pastAuth(err)
		}},
		{"metal/abort", authz.TypeMetalNode, func(o objects) string { return o.node }, func(ctx context.Context, tn string, o objects) error {
			_, err := svc.Metal.AbortNode(ctx, &v1.AbortNodeRequest{TenantId: tn, NodeId: o.node})
			return pastAuth(err)
		}},
		{"metal/updateCredentials", authz.TypeMetalNode, func(o objects) string { return o.node }, func(ctx context.Context, tn string, o objects) error {
			_, err := svc.Metal.UpdateNodeCredentials(ctx, &v1.UpdateNodeCredentialsRequest{TenantId: tn, NodeId: o.node, Username: "admin", Password: "bmc-Pa55-matrix2"})
			return pastAuth(err)
		}},
		{"metal/retire", authz.TypeMetalNode, func(o objects) string { return o.node }, func(ctx context.Context, tn string, o objects) error {
			_, err := svc.Metal.RetireNode(ctx, &v1.RetireNodeRequest{TenantId: tn, NodeId: o.node})
			return pastAuth(err)
		}},
		// Deletes last: they change the objects' state (and are idempotent).
		{"certificates/delete", authz.TypeCertificate, func(o objects) string { return o.cert }, func(ctx context.Context, tn string, o objects) error {
			_, err := svc.Resources.DeleteCertificate(ctx, &v1.DeleteCertificateRequest{TenantId: tn, CertificateId: o.cert})
			return err
		}},
		{"subnets/delete", authz.TypeSubnet, func(o objects) string { return o.subnet }, func(ctx context.Context, tn string, o objects) error {
			_, err := svc.Resources.DeleteSubnet(ctx, &v1.DeleteSubnetRequest{TenantId: tn, SubnetId: o.subnet})
			return err
		}},
		{"instances/delete", authz.TypeInstance, func(o objects) string { return o.instance }, func(ctx context.Context, tn string, o objects) error {
			_, err := svc.Resources.DeleteInstance(ctx, &v1.DeleteInstanceRequest{TenantId: tn, InstanceId: o.instance})
			return err
		}},
	}
}

// principal kinds of the matrix: a tenant role, a direct grant on one object, or nothing.
type principalKind struct {
	name  string
	role  string // tenant role
	level string // direct grant on the method's object: reader or manager
}

var principalKinds = []principalKind{
	{"no role", "", ""}, {"viewer", "viewer", ""}, {"editor", "editor", ""}, {"admin", "admin", ""},
	{"direct reader", "", "reader"}, {"direct manager", "", "manager"},
}

// expected outcome of a principal on its own tenant's object.
// perm is the method's permClass.
func expected(p principalKind, m method, perm string) apierr.Code {
	rank := map[string]int{"": 0, "viewer": 1, "editor": 2, "admin": 3}[p.role]
	need := map[string]int{"read": 1, "manage": 2, "admin": 3, "platform": 4}[perm]
	switch {
	case rank >= need:
		return ""
	case m.typ == authz.TypeTenant:
		return errcode.AccessDenied
	case p.level == "manager" && perm != "admin":
		return ""
	case p.level == "reader" && perm == "read":
		return ""
	case p.level != "" || rank >= 1:
		// It may see the object but not change it.
		return errcode.AccessDenied
	default:
		return errcode.NotFound
	}
}

// permClass is the class of a permission the matrix expects outcomes by: platform admins only,
// tenant admins, editors (manage and update), viewers (read).
func permClass(p string) string {
	switch {
	case p == string(authz.PlatformManage):
		return "platform"
	case p == string(authz.TenantsManage):
		return "admin"
	case strings.HasSuffix(p, ":read"):
		return "read"
	case strings.HasSuffix(p, ":manage"), strings.HasSuffix(p, ":update"):
		return "manage"
	}
	return ""
}

// matrixNames maps each bearer-authorized procedure's matrix name (its JSON route, or its
// procedure when it streams) to its permission, from the descriptors.
func matrixNames() map[string]string {
	out := map[string]string{}
	for _, p := range server.Procedures() {
		if p.Access.GetJoinToken() {
			continue // authenticated by a join token, not authorized (TestJoin*)
		}
		name := p.Access.GetJsonRoute()
		if name == "" {
			name = p.Name
		}
		out[name] = p.Access.GetPermission()
	}
	return out
}

// TestMatrixCoversEveryProcedure: a new procedure fails here until it has a row in
// matrixMethods, and a row whose procedure is gone fails too.
func TestMatrixCoversEveryProcedure(t *testing.T) {
	names := matrixNames()
	rows := map[string]bool{}
	for _, m := range matrixMethods(server.Services{}) {
		if rows[m.name] {
			t.Errorf("%s has two rows", m.name)
		}
		rows[m.name] = true
		if _, ok := names[m.name]; !ok {
			t.Errorf("row %s names no procedure", m.name)
		}
	}
	for name, perm := range names {
		if !rows[name] {
			t.Errorf("%s has no row in the authorization matrix", name)
		}
		if permClass(perm) == "" {
			t.Errorf("%s: permission %q has no class", name, perm)
		}
	}
}

// TestAuthorizationMatrix: principals x roles x methods x objects of their own tenant and of
// another, every outcome asserted against the real OpenFGA engine. Another tenant's objects are
// NOT_FOUND whatever tenantId the request names; another tenant's tenant-level methods ACCESS_DENIED.
// The permission each method needs is its (access) option's.
func TestAuthorizationMatrix(t *testing.T) {
	s := apptest.Start(t)
	svc := s.App
	// The calls under test go through a Service of their own whose engine records what it is
	// asked: the first permission a call checks must be its (access) option's, exactly.
	rec := &recordingAuthz{Authorizer: svc.Base.Authz}
	checked := server.NewServices(core.NewBase(svc.DB, rec, svc.Base.Keyring, svc.Base.Log, svc.Base.Outbound), nil, events.Options{Poll: svc.Events.Poll})
	names := matrixNames()
	// The other tenant's objects are made once: every probe of them is refused, so none changes.
	other := s.NewTenant(t, "other-matrix", "editor")
	otherObj := makeObjects(t, s, other)
	for _, m := range matrixMethods(checked) {
		perm := permClass(names[m.name])
		if perm == "" {
			t.Fatalf("%s: no permission in the descriptors", m.name)
		}
		for _, p := range principalKinds {
			t.Run(m.name+"/"+p.name, func(t *testing.T) {
				n := fmt.Sprintf("%d", len(m.name)*100+len(p.name)) + apptest.NewKey()
				own := s.NewTenant(t, "own-"+n, "editor")
				ownObj := makeObjects(t, s, own)
				_, _, ctx := s.NewPrincipal(t, own.ID, p.role)
				if p.level != "" && m.object != nil {
					pid := principalOf(ctx)
					if err := svc.Tenancy.GrantRole(s.AdminCtx, &v1.GrantRoleRequest{TenantId: own.ID, PrincipalId: pid, Role: p.level,
						ObjectType: m.typ, ObjectId: m.object(ownObj)}); err != nil {
						t.Fatal(err)
					}
				}
				rec.reset()
				if got, want := apierr.CodeOf(m.call(ctx, own.ID, ownObj)), expected(p, m, perm); got != want {
					t.Errorf("own object: got %q, want %q", got, want)
				}
				// The platform surface is decided by the caller's platform grant, read once at
				// authentication: no check is asked for it.
				if first := rec.first(); perm != "platform" && first != names[m.name] {
					t.Errorf("the call checked %q first, its (access) option names %q", first, names[m.name])
				}
				// Cross-tenant probes: naming either tenant id, another tenant's object looks absent.
				for _, tenant := range []string{own.ID, other.ID} {
					err := m.call(ctx, tenant, otherObj)
					want := errcode.NotFound
					if m.typ == authz.TypeTenant {
						if tenant == own.ID {
							continue // a tenant-level method on one's own tenant was checked above
						}
						want = errcode.AccessDenied
					}
					if got := apierr.CodeOf(err); got != want {
						t.Errorf("other tenant's object via tenantId %s: got %q (%v), want %q", tenant, got, err, want)
					}
				}
			})
		}
	}
}

// recordingAuthz passes every call to the real engine and records the permissions checked.
type recordingAuthz struct {
	authz.Authorizer
	mu    sync.Mutex
	perms []authz.Permission
}

func (r *recordingAuthz) Check(ctx context.Context, c authz.Check) (bool, error) {
	r.record(c)
	return r.Authorizer.Check(ctx, c)
}

func (r *recordingAuthz) BatchCheck(ctx context.Context, cs []authz.Check) ([]bool, error) {
	r.record(cs...)
	return r.Authorizer.BatchCheck(ctx, cs)
}

func (r *recordingAuthz) record(cs ...authz.Check) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range cs {
		r.perms = append(r.perms, c.Permission)
	}
}

func (r *recordingAuthz) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.perms = nil
}

// first is the first permission checked since reset ("" when none was).
func (r *recordingAuthz) first() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.perms) == 0 {
		return ""
	}
	return string(r.perms[0])
}

func principalOf(ctx context.Context) string {
	c, _ := coreCaller(ctx)
	return c
}
