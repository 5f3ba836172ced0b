package core_test

import (
	"testing"

	"better-compute.dev/compute/apierr"
	"better-compute.dev/compute/app/apptest"
	v1 "better-compute.dev/compute/gen/go/bettercompute/compute/v1"
	"better-compute.dev/compute/gen/go/bettercompute/compute/v1/errcode"
)

// TestCrossTenantProbes: every remaining method that takes an id, called by tenant a's admin with
// tenant b's ids, finds nothing (NOT_FOUND) — and writes nothing.
func TestCrossTenantProbes(t *testing.T) {
	s := apptest.Start(t)
	svc := s.App
	a, b := s.NewTenant(t, "acme", "admin"), s.NewTenant(t, "globex", "admin")
	bNet, err := svc.Resources.CreateNetwork(b.Ctx, &v1.CreateNetworkRequest{TenantId: b.ID, AccountId: b.AccountID, Name: "n"})
	if err != nil {
		t.Fatal(err)
	}
	bSubnet := s.Subnet(t, b, "nyc3", "10.5.0.0/24")
	bPrincipal, _, _ := s.NewPrincipal(t, b.ID, "viewer")
	bToken, _, err := svc.Tenancy.CreateToken(s.AdminCtx, &v1.CreateTokenRequest{TenantId: b.ID, PrincipalId: bPrincipal})
	if err != nil {
		t.Fatal(err)
	}
	bPrj, err := svc.Tenancy.CreateProject(b.Ctx, &v1.CreateProjectRequest{TenantId: b.ID, Name: "p"})
	if err != nil {
		t.Fatal(err)
	}
	bLB, err := svc.LoadBalancers.CreateLoadBalancer(b.Ctx, apptest.LoadBalancerRequest(b, apptest.PoolTargets()))
	if err != nil {
		t.Fatal(err)
	}
	ctx := a.Ctx
	for _, tc := range []struct {
		reason string
		call   func() error
		want   apierr.Code
	}{
		{"pools/get of another tenant's pool", func() error {
			_, err := svc.Pools.GetPool(ctx, &v1.GetPoolRequest{TenantId: a.ID, PoolId: b.PoolID})
			return err
		}, errcode.NotFound},
		{"pools/get naming the other tenant", func() error {
			_, err := svc.Pools.GetPool(ctx, &v1.GetPoolRequest{TenantId: b.ID, PoolId: b.PoolID})
			return err
		}, errcode.NotFound},
		{"providerAccounts/get", func() error {
			_, err := svc.Tenancy.GetProviderAccount(ctx, &v1.GetProviderAccountRequest{TenantId: a.ID, AccountId: b.AccountID})
			return err
		}, errcode.NotFound},
		{"networks/create on another tenant's account", func() error {
			_, err := svc.Resources.CreateNetwork(ctx, &v1.CreateNetworkRequest{TenantId: a.ID, AccountId: b.AccountID, Name: "x"})
			return err
		}, errcode.NotFound},
		{"subnets/create in another tenant's network", func() error {
			_, err := svc.Resources.CreateSubnet(ctx, &v1.CreateSubnetRequest{TenantId: a.ID, NetworkId: bNet.GetId(), Name: "x", Region: "nyc3", IpRange: "10.7.0.0/24"})
			return err
		}, errcode.NotFound},
		{"certificates/create on another tenant's account", func() error {
			_, err := svc.Resources.CreateCertificate(ctx, &v1.CreateCertificateRequest{TenantId: a.ID, AccountId: b.AccountID, Name: "x",
				Source: &v1.CreateCertificateRequest_Managed{Managed: &v1.ManagedCertificate{DnsNames: []string{"a.example"}}}})
			return err
		}, errcode.NotFound},
		{"instances/create in another tenant's pool", func() error {
			_, err := svc.Resources.CreateInstance(ctx, &v1.CreateInstanceRequest{TenantId: a.ID, PoolId: b.PoolID, Name: "x", Region: "nyc3", Flavor: "small"})
			return err
		}, errcode.NotFound},
		{"instances/create on another tenant's subnet", func() error {
			_, err := svc.Resources.CreateInstance(ctx, &v1.CreateInstanceRequest{TenantId: a.ID, PoolId: a.PoolID, Name: "x", Region: "nyc3", Flavor: "small", SubnetId: bSubnet})
			return err
		}, errcode.NotFound},
		{"instances/create in another tenant's project", func() error {
			_, err := svc.Resources.CreateInstance(ctx, &v1.CreateInstanceRequest{TenantId: a.ID, PoolId: a.PoolID, Name: "x", Region: "nyc3", Flavor: "small", ProjectId: bPrj.GetId()})
			return err
		}, errcode.NotFound},
		{"loadBalancers/create in another tenant's project", func() error {
			r := apptest.LoadBalancerRequest(a, apptest.PoolTargets())
			r.ProjectId = bPrj.GetId()
			_, err := svc.LoadBalancers.CreateLoadBalancer(ctx, r)
			return err
		}, errcode.NotFound},
		{"loadBalancers/create in another tenant's pool", func() error {
			r := apptest.LoadBalancerRequest(a, apptest.PoolTargets())
			r.PoolId = b.PoolID
			_, err := svc.LoadBalancers.CreateLoadBalancer(ctx, r)
			return err
		}, errcode.NotFound},
		{"tokens/create for another tenant's principal", func() error {
			_, _, err := svc.Tenancy.CreateToken(ctx, &v1.CreateTokenRequest{TenantId: a.ID, PrincipalId: bPrincipal})
			return err
		}, errcode.NotFound},
		{"tokens/revoke of another tenant's token", func() error {
			_, err := svc.Tenancy.RevokeToken(ctx, &v1.RevokeTokenRequest{TenantId: a.ID, TokenId: bToken.GetId()})
			return err
		}, errcode.NotFound},
		{"roles/grant to another tenant's principal", func() error {
			return svc.Tenancy.GrantRole(ctx, &v1.GrantRoleRequest{TenantId: a.ID, PrincipalId: bPrincipal, Role: "admin"})
		}, errcode.NotFound},
		{"roles/grant on another tenant's object", func() error {
			return svc.Tenancy.GrantRole(ctx, &v1.GrantRoleRequest{TenantId: a.ID, PrincipalId: principalOf(a.Ctx), Role: "manager",
				ObjectType: "compute-provider-load-balancer", ObjectId: bLB.GetId()})
		}, errcode.NotFound},
		{"principals/list of another tenant", func() error {
			_, err := svc.Tenancy.ListPrincipals(ctx, &v1.ListPrincipalsRequest{TenantId: b.ID})
			return err
		}, errcode.AccessDenied},
		{"pools/list of another tenant", func() error {
			_, err := svc.Pools.ListPools(ctx, &v1.ListPoolsRequest{TenantId: b.ID})
			return err
		}, errcode.AccessDenied},
	} {
		if got := apierr.CodeOf(tc.call()); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.reason, got, tc.want)
		}
	}
	// The revoked-or-not token of b still works: nothing was changed by the probes.
	if _, err := svc.LoadBalancers.GetLoadBalancer(b.Ctx, &v1.GetLoadBalancerRequest{TenantId: b.ID, LoadBalancerId: bLB.GetId()}); err != nil {
		t.Fatal(err)
	}
	var revoked int
	_ = s.App.DB.Q().QueryRow(t.Context(), "SELECT count(*) FROM tokens WHERE revoked_at IS NOT NULL").Scan(&revoked)
	if revoked != 0 {
		t.Fatalf("%d tokens revoked by probes", revoked)
	}
}
