package authz

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The conformance suite runs against every engine; each test gets a fresh
// authorizer from newAuthz, so grants never leak between tests.

// permissionLevel is the least tenant role a permission needs.
var permissionLevel = map[Permission]Role{
	LoadBalancersRead: RoleViewer, LoadBalancersManage: RoleEditor,
	InstancesRead: RoleViewer, InstancesUpdate: RoleEditor, InstancesManage: RoleEditor,
	PoolsRead: RoleViewer, PoolsManage: RoleEditor,
	ProjectsRead: RoleViewer, ProjectsManage: RoleEditor,
	NetworksRead: RoleViewer, NetworksManage: RoleEditor,
	CertificatesRead: RoleViewer, CertificatesManage: RoleEditor,
	ProviderAccountsRead: RoleViewer, ProviderAccountsManage: RoleEditor,
	MetalRead: RoleViewer, MetalManage: RoleEditor,
	SubstratesRead: RoleViewer, EventsRead: RoleViewer, UsageRead: RoleViewer,
	TenantsRead: RoleViewer, TenantsManage: RoleAdmin,
}

var roleRank = map[Role]int{"": 0, RoleViewer: 1, RoleEditor: 2, RoleAdmin: 3}

// typePermissions is what each resource type answers to, besides compute-tenant
// which answers to every permission.
var typePermissions = map[string][]Permission{
	TypeProviderLoadBalancer: {LoadBalancersRead, LoadBalancersManage},
	TypeInstance:             {InstancesRead, InstancesUpdate, InstancesManage},
	TypePool:                 {PoolsRead, PoolsManage},
	TypeProject:              {ProjectsRead, ProjectsManage},
	TypeNetwork:              {NetworksRead, NetworksManage},
	TypeSubnet:               {NetworksRead, NetworksManage},
	TypeCertificate:          {CertificatesRead, CertificatesManage},
	TypeProviderAccount:      {ProviderAccountsRead, ProviderAccountsManage},
	TypeMetalNode:            {MetalRead, MetalManage},
	TypePoolSubstrate:        {SubstratesRead},
}

// Principals of the fixture: one per role on tenant-a, an admin of tenant-b and
// one without any grant.
const (
	tenantA   = "ten_a"
	tenantB   = "ten_b"
	prnAdmin  = "prn_admin_a"
	prnEditor = "prn_editor_a"
	prnViewer = "prn_viewer_a"
	prnAdminB = "prn_admin_b"
	prnNone   = "prn_nobody"
)

func grantFixture(t *testing.T, a Authorizer) {
	t.Helper()
	ctx := context.Background()
	for _, g := range []struct {
		tenant, principal string
		role              Role
	}{
		{tenantA, prnAdmin, RoleAdmin},
		{tenantA, prnEditor, RoleEditor},
		{tenantA, prnViewer, RoleViewer},
		{tenantB, prnAdminB, RoleAdmin},
	} {
		if err := a.GrantTenantRole(ctx, g.tenant, g.principal, g.role); err != nil {
			t.Fatalf("grant %s %s on %s: %v", g.principal, g.role, g.tenant, err)
		}
	}
}

func runConformance(t *testing.T, newAuthz func(t *testing.T) Authorizer) {
	t.Run("RoleTable", func(t *testing.T) { t.Parallel(); testRoleTable(t, newAuthz(t)) })
	t.Run("RoleMatrix", func(t *testing.T) { t.Parallel(); testRoleMatrix(t, newAuthz(t)) })
	t.Run("DirectGrants", func(t *testing.T) { t.Parallel(); testDirectGrants(t, newAuthz(t)) })
	t.Run("StoredTenantTupleIgnored", func(t *testing.T) { t.Parallel(); testStoredTenantTuple(t, newAuthz(t)) })
	t.Run("BatchOrder", func(t *testing.T) { t.Parallel(); testBatchOrder(t, newAuthz(t)) })
	t.Run("InputErrors", func(t *testing.T) { t.Parallel(); testInputErrors(t, newAuthz(t)) })
	t.Run("RevokeAndIdempotence", func(t *testing.T) { t.Parallel(); testRevoke(t, newAuthz(t)) })
}

func testRoleTable(t *testing.T, a Authorizer) {
	grantFixture(t, a)
	lbA := Object{Type: TypeProviderLoadBalancer, ID: "plb_1", Tenant: tenantA}
	instA := Object{Type: TypeInstance, ID: "ins_1", Tenant: tenantA}
	cases := []struct {
		reason string
		check  Check
		want   bool
	}{
		{"a viewer reads a load balancer of its tenant", Check{prnViewer, LoadBalancersRead, lbA}, true},
		{"a viewer cannot manage it", Check{prnViewer, LoadBalancersManage, lbA}, false},
		{"an editor manages it", Check{prnEditor, LoadBalancersManage, lbA}, true},
		{"an admin manages it", Check{prnAdmin, LoadBalancersManage, lbA}, true},
		{"an admin of another tenant cannot read it", Check{prnAdminB, LoadBalancersRead, lbA}, false},
		{"a principal without grants cannot read it", Check{prnNone, LoadBalancersRead, lbA}, false},
		{"list: a viewer reads load balancers on its tenant", Check{prnViewer, LoadBalancersRead, TenantObject(tenantA)}, true},
		{"list: an admin of tenant b cannot list tenant a", Check{prnAdminB, LoadBalancersRead, TenantObject(tenantA)}, false},
		{"create: an editor manages load balancers on its tenant", Check{prnEditor, LoadBalancersManage, TenantObject(tenantA)}, true},
		{"create: a viewer cannot", Check{prnViewer, LoadBalancersManage, TenantObject(tenantA)}, false},
		{"an editor updates an instance of its tenant", Check{prnEditor, InstancesUpdate, instA}, true},
		{"a viewer cannot update an instance", Check{prnViewer, InstancesUpdate, instA}, false},
		{"the same object id under tenant b is tenant b's", Check{prnAdminB, InstancesUpdate, Object{TypeInstance, "ins_1", tenantB}}, true},
		{"an editor of a cannot reach the same id under tenant b", Check{prnEditor, InstancesUpdate, Object{TypeInstance, "ins_1", tenantB}}, false},
		{"only an admin manages the tenant", Check{prnEditor, TenantsManage, TenantObject(tenantA)}, false},
		{"an admin manages the tenant", Check{prnAdmin, TenantsManage, TenantObject(tenantA)}, true},
		{"a tenant object may name itself as tenant", Check{prnViewer, EventsRead, Object{TypeTenant, tenantA, tenantA}}, true},
		{"subnets use network permissions", Check{prnViewer, NetworksRead, Object{TypeSubnet, "sub_1", tenantA}}, true},
	}
	for _, tc := range cases {
		got, err := a.Check(context.Background(), tc.check)
		if err != nil {
			t.Errorf("%s: %v", tc.reason, err)
			continue
		}
		if got != tc.want {
			t.Errorf("%s: Check(%+v) = %v, want %v", tc.reason, tc.check, got, tc.want)
		}
	}
}

// testRoleMatrix checks every principal x permission x type x (own tenant,
// other tenant) against the role levels, through BatchCheck.
func testRoleMatrix(t *testing.T, a Authorizer) {
	grantFixture(t, a)
	principals := map[string]Role{prnAdmin: RoleAdmin, prnEditor: RoleEditor, prnViewer: RoleViewer, prnNone: "", prnAdminB: ""}
	var checks []Check
	var want []bool
	var names []string
	add := func(c Check, w bool) {
		checks = append(checks, c)
		want = append(want, w)
		names = append(names, fmt.Sprintf("%s %s %s@%s", c.Principal, c.Permission, c.Object, c.Object.Tenant))
	}
	for prn, role := range principals {
		for _, p := range AllPermissions {
			add(Check{prn, p, TenantObject(tenantA)}, roleRank[role] >= roleRank[permissionLevel[p]])
		}
		for typ, perms := range typePermissions {
			for _, p := range perms {
				own := Object{Type: typ, ID: "obj_1", Tenant: tenantA}
				other := Object{Type: typ, ID: "obj_2", Tenant: tenantB}
				add(Check{prn, p, own}, roleRank[role] >= roleRank[permissionLevel[p]])
				add(Check{prn, p, other}, prn == prnAdminB)
			}
		}
	}
	got, err := a.BatchCheck(context.Background(), checks)
	if err != nil {
		t.Fatal(err)
	}
	for i := range checks {
		if got[i] != want[i] {
			t.Errorf("%s = %v, want %v", names[i], got[i], want[i])
		}
	}
}

func testDirectGrants(t *testing.T, a Authorizer) {
	ctx := context.Background()
	lb := Object{Type: TypeProviderLoadBalancer, ID: "plb_shared", Tenant: tenantA}
	inst := Object{Type: TypeInstance, ID: "ins_shared", Tenant: tenantA}
	must(t, a.GrantObject(ctx, lb, "prn_reader", LevelReader))
	must(t, a.GrantObject(ctx, inst, "prn_manager", LevelManager))
	cases := []struct {
		reason string
		check  Check
		want   bool
	}{
		{"a direct reader reads the object", Check{"prn_reader", LoadBalancersRead, lb}, true},
		{"a direct reader cannot manage it", Check{"prn_reader", LoadBalancersManage, lb}, false},
		{"a direct reader reads no other object", Check{"prn_reader", LoadBalancersRead, Object{TypeProviderLoadBalancer, "plb_other", tenantA}}, false},
		{"a direct grant gives nothing on the tenant", Check{"prn_reader", LoadBalancersRead, TenantObject(tenantA)}, false},
		{"a direct manager updates the instance", Check{"prn_manager", InstancesUpdate, inst}, true},
		{"a direct manager reads it (manager implies reader)", Check{"prn_manager", InstancesRead, inst}, true},
		{"a direct grant holds whatever tenant the database names", Check{"prn_manager", InstancesManage, Object{TypeInstance, "ins_shared", tenantB}}, true},
	}
	for _, tc := range cases {
		got, err := a.Check(ctx, tc.check)
		if err != nil || got != tc.want {
			t.Errorf("%s: got %v, %v; want %v", tc.reason, got, err, tc.want)
		}
	}
	if err := a.GrantObject(ctx, TenantObject(tenantA), "prn_x", LevelReader); !errors.Is(err, ErrInvalid) {
		t.Errorf("direct grant on a tenant: err = %v, want ErrInvalid", err)
	}
}

// storeRawTuple writes a tuple outside the Authorizer API, as a bug or a stale
// write might have.
type rawWriter interface {
	writeRaw(ctx context.Context, object, relation, user string, withBinding string) error
}

func testStoredTenantTuple(t *testing.T, a Authorizer) {
	grantFixture(t, a)
	ctx := context.Background()
	rw, ok := a.(rawWriter)
	if !ok {
		t.Fatalf("%T offers no raw writes for this test", a)
	}
	lb := Object{Type: TypeProviderLoadBalancer, ID: "plb_moved", Tenant: tenantA}
	// A tenant tuple without the condition is refused by the model itself.
	if err := rw.writeRaw(ctx, lb.String(), tenantRelation, TypeTenant+":"+tenantB, ""); !errors.Is(err, ErrRejected) {
		t.Fatalf("unconditioned stored tenant tuple: err = %v, want ErrRejected", err)
	}
	// One with the condition but a binding of its own (a guess, or another
	// process's) is stored, and must not let tenant b's admin in.
	must(t, rw.writeRaw(ctx, lb.String(), tenantRelation, TypeTenant+":"+tenantB, "guessed"))
	got, err := a.Check(ctx, Check{prnAdminB, LoadBalancersManage, lb})
	if err != nil || got {
		t.Errorf("tenant b admin with a stored tenant-b tuple: got %v, %v; want false", got, err)
	}
	got, err = a.Check(ctx, Check{prnEditor, LoadBalancersManage, lb})
	if err != nil || !got {
		t.Errorf("tenant a editor (the database's tenant): got %v, %v; want true", got, err)
	}
}

func testBatchOrder(t *testing.T, a Authorizer) {
	grantFixture(t, a)
	const n = 3*MaxBatch + 7
	checks := make([]Check, n)
	want := make([]bool, n)
	for i := range checks {
		tenant := tenantA
		if i%3 == 0 {
			tenant = tenantB
		}
		checks[i] = Check{prnViewer, InstancesRead, Object{TypeInstance, fmt.Sprintf("ins_%d", i), tenant}}
		want[i] = tenant == tenantA
	}
	got, err := a.BatchCheck(context.Background(), checks)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("batch of %d (-want +got):\n%s", n, diff)
	}
	empty, err := a.BatchCheck(context.Background(), nil)
	if err != nil || len(empty) != 0 {
		t.Errorf("empty batch: %v, %v", empty, err)
	}
}

func testInputErrors(t *testing.T, a Authorizer) {
	ctx := context.Background()
	lb := Object{Type: TypeProviderLoadBalancer, ID: "plb_1", Tenant: tenantA}
	cases := []struct {
		reason string
		check  Check
		want   error
	}{
		{"a permission of another type", Check{prnAdmin, InstancesUpdate, lb}, ErrUnknownPermission},
		{"a permission the model does not know", Check{prnAdmin, "compute:load-balancers:delete", lb}, ErrUnknownPermission},
		{"a permission outside the namespace", Check{prnAdmin, "load-balancers:read", lb}, ErrUnknownPermission},
		{"a role is not a permission", Check{prnAdmin, "compute:admin", TenantObject(tenantA)}, ErrUnknownPermission},
		{"substrates are read only", Check{prnAdmin, "compute:substrates:manage", Object{TypePoolSubstrate, "sub_1", tenantA}}, ErrUnknownPermission},
		{"an unknown type", Check{prnAdmin, LoadBalancersRead, Object{"compute-nothing", "x", tenantA}}, ErrInvalid},
		{"an object without tenant", Check{prnAdmin, LoadBalancersRead, Object{TypeProviderLoadBalancer, "plb_1", ""}}, ErrInvalid},
		{"a tenant object naming another tenant", Check{prnAdmin, LoadBalancersRead, Object{TypeTenant, tenantA, tenantB}}, ErrInvalid},
		{"an empty principal", Check{"", LoadBalancersRead, lb}, ErrInvalid},
		{"a principal with userset syntax", Check{"prn_a#member", LoadBalancersRead, lb}, ErrInvalid},
		{"a wildcard object", Check{prnAdmin, LoadBalancersRead, Object{TypeProviderLoadBalancer, "*", tenantA}}, ErrInvalid},
	}
	for _, tc := range cases {
		got, err := a.Check(ctx, tc.check)
		if !errors.Is(err, tc.want) || got {
			t.Errorf("%s: Check = %v, %v; want false, %v", tc.reason, got, err, tc.want)
		}
		res, err := a.BatchCheck(ctx, []Check{{prnAdmin, LoadBalancersRead, lb}, tc.check})
		if !errors.Is(err, tc.want) || res != nil {
			t.Errorf("%s: BatchCheck = %v, %v; want nil, %v", tc.reason, res, err, tc.want)
		}
	}
	if err := a.GrantTenantRole(ctx, tenantA, prnAdmin, "owner"); !errors.Is(err, ErrInvalid) {
		t.Errorf("unknown role: %v", err)
	}
	if err := a.GrantObject(ctx, lb, prnAdmin, "owner"); !errors.Is(err, ErrInvalid) {
		t.Errorf("unknown level: %v", err)
	}
}

func testRevoke(t *testing.T, a Authorizer) {
	ctx := context.Background()
	pool := Object{Type: TypePool, ID: "pool_1", Tenant: tenantA}
	read := Check{"prn_temp", PoolsRead, pool}
	steps := []struct {
		reason string
		do     func() error
		want   bool
	}{
		{"no grant yet", nil, false},
		{"a tenant role is seen at once", func() error { return a.GrantTenantRole(ctx, tenantA, "prn_temp", RoleViewer) }, true},
		{"granting twice is fine", func() error { return a.GrantTenantRole(ctx, tenantA, "prn_temp", RoleViewer) }, true},
		{"revoking is seen at once", func() error { return a.RevokeTenantRole(ctx, tenantA, "prn_temp", RoleViewer) }, false},
		{"revoking twice is fine", func() error { return a.RevokeTenantRole(ctx, tenantA, "prn_temp", RoleViewer) }, false},
		{"a direct grant", func() error { return a.GrantObject(ctx, pool, "prn_temp", LevelReader) }, true},
		{"a direct grant twice", func() error { return a.GrantObject(ctx, pool, "prn_temp", LevelReader) }, true},
		{"revoking the direct grant", func() error { return a.RevokeObject(ctx, pool, "prn_temp", LevelReader) }, false},
		{"revoking an absent direct grant", func() error { return a.RevokeObject(ctx, pool, "prn_temp", LevelManager) }, false},
	}
	for _, s := range steps {
		if s.do != nil {
			if err := s.do(); err != nil {
				t.Fatalf("%s: %v", s.reason, err)
			}
		}
		got, err := a.Check(ctx, read)
		if err != nil || got != s.want {
			t.Errorf("%s: got %v, %v; want %v", s.reason, got, err, s.want)
		}
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
