package core_test

import (
	"context"
	"fmt"
	"testing"

	"better-compute.dev/compute/apierr"
	"better-compute.dev/compute/app/apptest"
	"better-compute.dev/compute/authz"
	v1 "better-compute.dev/compute/gen/go/bettercompute/compute/v1"
)

// objects of one tenant that the matrix acts on.
type objects struct {
	tenant                                   string
	lb, instance, subnet, network, cert, prj string
	substratePool, substrate                 string
}

func makeObjects(t *testing.T, s *apptest.Stack, tn apptest.Tenant) objects {
	t.Helper()
	svc := s.App.Service
	o := objects{tenant: tn.ID}
	lb, err := svc.CreateLoadBalancer(tn.Ctx, regional(tn, poolTargets()))
	if err != nil {
		t.Fatal(err)
	}
	o.lb = lb.GetId()
	o.instance = s.MachineInstance(t, tn, "nyc3", "").GetId()
	o.subnet = subnet(t, s, tn, "sfo3", "10.9.0.0/24")
	sn, _ := svc.GetSubnet(tn.Ctx, &v1.GetSubnetRequest{TenantId: tn.ID, SubnetId: o.subnet})
	o.network = sn.GetNetworkId()
	o.cert = cert(t, s, tn, tn.AccountID)
	p, err := svc.CreateProject(tn.Ctx, &v1.CreateProjectRequest{TenantId: tn.ID, Name: "p" + tn.ID})
	if err != nil {
		t.Fatal(err)
	}
	o.prj = p.GetId()
	pool, err := svc.CreatePool(s.AdminCtx, &v1.CreatePoolRequest{TenantId: tn.ID, AccountId: tn.AccountID, Name: "k8s", Regions: []string{"nyc3"},
		Policy: &v1.PoolPolicy{Substrate: &v1.PoolSubstrate{Kind: "kubernetes", Account: tn.AccountID,
			Cluster: &v1.SubstrateCluster{Mode: &v1.SubstrateCluster_Adopt{Adopt: &v1.ClusterAdopt{Id: "cluster-1"}}}}}})
	if err != nil {
		t.Fatal(err)
	}
	sub, err := svc.GetSubstrate(s.AdminCtx, &v1.GetSubstrateRequest{TenantId: tn.ID, PoolId: pool.GetId()})
	if err != nil {
		t.Fatal(err)
	}
	o.substratePool, o.substrate = pool.GetId(), sub.GetId()
	return o
}

// method is one API method: the permission it needs, the object type it checks (TypeTenant for
// list and create), and the call against a tenant id and that tenant's objects.
type method struct {
	name   string
	perm   string // "read", "manage" or "admin"
	typ    string
	object func(o objects) string
	call   func(ctx context.Context, tenant string, o objects) error
}

func matrixMethods(s *apptest.Stack) []method {
	svc := s.App.Service
	return []method{
		{"loadBalancers/get", "read", authz.TypeProviderLoadBalancer, func(o objects) string { return o.lb }, func(ctx context.Context, tn string, o objects) error {
			_, err := svc.GetLoadBalancer(ctx, &v1.GetLoadBalancerRequest{TenantId: tn, LoadBalancerId: o.lb})
			return err
		}},
		{"loadBalancers/update", "manage", authz.TypeProviderLoadBalancer, func(o objects) string { return o.lb }, func(ctx context.Context, tn string, o objects) error {
			_, err := svc.UpdateLoadBalancer(ctx, &v1.UpdateLoadBalancerRequest{TenantId: tn, LoadBalancerId: o.lb, RedirectHttpToHttps: boolp(true)})
			return err
		}},
		{"loadBalancers/delete", "manage", authz.TypeProviderLoadBalancer, func(o objects) string { return o.lb }, func(ctx context.Context, tn string, o objects) error {
			_, err := svc.DeleteLoadBalancer(ctx, &v1.DeleteLoadBalancerRequest{TenantId: tn, LoadBalancerId: o.lb})
			return err
		}},
		{"loadBalancers/list", "read", authz.TypeTenant, nil, func(ctx context.Context, tn string, o objects) error {
			_, err := svc.ListLoadBalancers(ctx, &v1.ListLoadBalancersRequest{TenantId: tn})
			return err
		}},
		{"loadBalancers/create", "manage", authz.TypeTenant, nil, func(ctx context.Context, tn string, o objects) error {
			r := &v1.CreateLoadBalancerRequest{TenantId: tn, PoolId: "pool_01m8vjp5r2ph80akzhx2janz7c", Name: "x", Region: "nyc3",
				Targets: poolTargets(), Forwarding: httpRule(), IdempotencyKey: newKey()}
			_, err := svc.CreateLoadBalancer(ctx, r)
			if apierr.CodeOf(err) == apierr.NotFound { // authorized; the made-up pool is then not found
				return nil
			}
			return err
		}},
		{"instances/get", "read", authz.TypeInstance, func(o objects) string { return o.instance }, func(ctx context.Context, tn string, o objects) error {
			_, err := svc.GetInstance(ctx, &v1.GetInstanceRequest{TenantId: tn, InstanceId: o.instance})
			return err
		}},
		{"instances/list", "read", authz.TypeTenant, nil, func(ctx context.Context, tn string, o objects) error {
			_, err := svc.ListInstances(ctx, &v1.ListInstancesRequest{TenantId: tn})
			return err
		}},
		{"subnets/get", "read", authz.TypeSubnet, func(o objects) string { return o.subnet }, func(ctx context.Context, tn string, o objects) error {
			_, err := svc.GetSubnet(ctx, &v1.GetSubnetRequest{TenantId: tn, SubnetId: o.subnet})
			return err
		}},
		{"networks/get", "read", authz.TypeNetwork, func(o objects) string { return o.network }, func(ctx context.Context, tn string, o objects) error {
			_, err := svc.GetNetwork(ctx, &v1.GetNetworkRequest{TenantId: tn, NetworkId: o.network})
			return err
		}},
		{"certificates/get", "read", authz.TypeCertificate, func(o objects) string { return o.cert }, func(ctx context.Context, tn string, o objects) error {
			_, err := svc.GetCertificate(ctx, &v1.GetCertificateRequest{TenantId: tn, CertificateId: o.cert})
			return err
		}},
		{"projects/get", "read", authz.TypeProject, func(o objects) string { return o.prj }, func(ctx context.Context, tn string, o objects) error {
			_, err := svc.GetProject(ctx, &v1.GetProjectRequest{TenantId: tn, ProjectId: o.prj})
			return err
		}},
		{"substrates/get", "read", authz.TypePoolSubstrate, func(o objects) string { return o.substrate }, func(ctx context.Context, tn string, o objects) error {
			_, err := svc.GetSubstrate(ctx, &v1.GetSubstrateRequest{TenantId: tn, PoolId: o.substratePool})
			return err
		}},
		{"substrates/list", "read", authz.TypeTenant, nil, func(ctx context.Context, tn string, o objects) error {
			_, err := svc.ListSubstrates(ctx, &v1.ListSubstratesRequest{TenantId: tn})
			return err
		}},
		{"events/list", "read", authz.TypeTenant, nil, func(ctx context.Context, tn string, o objects) error {
			_, _, err := svc.ListEvents(ctx, &v1.ListEventsRequest{TenantId: tn})
			return err
		}},
		{"usage/list", "read", authz.TypeTenant, nil, func(ctx context.Context, tn string, o objects) error {
			_, _, err := svc.ListUsage(ctx, &v1.ListUsageRequest{TenantId: tn})
			return err
		}},
		{"principals/list", "admin", authz.TypeTenant, nil, func(ctx context.Context, tn string, o objects) error {
			_, err := svc.ListPrincipals(ctx, &v1.ListPrincipalsRequest{TenantId: tn})
			return err
		}},
		// Deletes last: they change the objects' state (and are idempotent).
		{"certificates/delete", "manage", authz.TypeCertificate, func(o objects) string { return o.cert }, func(ctx context.Context, tn string, o objects) error {
			_, err := svc.DeleteCertificate(ctx, &v1.DeleteCertificateRequest{TenantId: tn, CertificateId: o.cert})
			return err
		}},
		{"subnets/delete", "manage", authz.TypeSubnet, func(o objects) string { return o.subnet }, func(ctx context.Context, tn string, o objects) error {
			_, err := svc.DeleteSubnet(ctx, &v1.DeleteSubnetRequest{TenantId: tn, SubnetId: o.subnet})
			return err
		}},
		{"instances/delete", "manage", authz.TypeInstance, func(o objects) string { return o.instance }, func(ctx context.Context, tn string, o objects) error {
			_, err := svc.DeleteInstance(ctx, &v1.DeleteInstanceRequest{TenantId: tn, InstanceId: o.instance})
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
func expected(p principalKind, m method) apierr.Code {
	rank := map[string]int{"": 0, "viewer": 1, "editor": 2, "admin": 3}[p.role]
	need := map[string]int{"read": 1, "manage": 2, "admin": 3}[m.perm]
	switch {
	case rank >= need:
		return ""
	case m.typ == authz.TypeTenant:
		return apierr.AccessDenied
	case p.level == "manager" && m.perm != "admin":
		return ""
	case p.level == "reader" && m.perm == "read":
		return ""
	case p.level != "" || rank >= 1:
		// It may see the object but not change it.
		return apierr.AccessDenied
	default:
		return apierr.NotFound
	}
}

// TestAuthorizationMatrix: principals x roles x methods x objects of their own tenant and of
// another, every outcome asserted against the real OpenFGA engine. Another tenant's objects are
// NOT_FOUND whatever tenantId the request names; another tenant's tenant-level methods ACCESS_DENIED.
func TestAuthorizationMatrix(t *testing.T) {
	s := apptest.Start(t)
	svc := s.App.Service
	for _, m := range matrixMethods(s) {
		for _, p := range principalKinds {
			t.Run(m.name+"/"+p.name, func(t *testing.T) {
				n := fmt.Sprintf("%d", len(m.name)*100+len(p.name)) + newKey()
				own := s.NewTenant(t, "own-"+n, "editor")
				other := s.NewTenant(t, "other-"+n, "editor")
				ownObj, otherObj := makeObjects(t, s, own), makeObjects(t, s, other)
				_, _, ctx := s.NewPrincipal(t, own.ID, p.role)
				if p.level != "" && m.object != nil {
					pid := principalOf(ctx)
					if err := svc.GrantRole(s.AdminCtx, &v1.GrantRoleRequest{TenantId: own.ID, PrincipalId: pid, Role: p.level,
						ObjectType: m.typ, ObjectId: m.object(ownObj)}); err != nil {
						t.Fatal(err)
					}
				}
				if got, want := apierr.CodeOf(m.call(ctx, own.ID, ownObj)), expected(p, m); got != want {
					t.Errorf("own object: got %q, want %q", got, want)
				}
				// Cross-tenant probes: naming either tenant id, another tenant's object looks absent.
				for _, tenant := range []string{own.ID, other.ID} {
					err := m.call(ctx, tenant, otherObj)
					want := apierr.NotFound
					if m.typ == authz.TypeTenant {
						if tenant == own.ID {
							continue // a tenant-level method on one's own tenant was checked above
						}
						want = apierr.AccessDenied
					}
					if got := apierr.CodeOf(err); got != want {
						t.Errorf("other tenant's object via tenantId %s: got %q (%v), want %q", tenant, got, err, want)
					}
				}
			})
		}
	}
}

func principalOf(ctx context.Context) string {
	c, _ := coreCaller(ctx)
	return c
}
