package authz

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func newMemory(t testing.TB) *Embedded {
	t.Helper()
	start := time.Now()
	a, err := NewEmbedded(context.Background(), EmbeddedOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Reported, not asserted: the lead reads it to budget tests.
	t.Logf("NewEmbedded(memory) took %v", time.Since(start))
	t.Cleanup(func() { _ = a.Close() })
	return a
}

func TestEmbeddedMemoryConformance(t *testing.T) {
	t.Parallel()
	runConformance(t, func(t *testing.T) Authorizer { return newMemory(t) })
}

func TestPermissionRelation(t *testing.T) {
	t.Parallel()
	cases := []struct {
		reason string
		in     Permission
		want   string
	}{
		{"dashes and colons become underscores", LoadBalancersRead, "load_balancers_read"},
		{"a two-word group", ProviderAccountsManage, "provider_accounts_manage"},
		{"a plain group", InstancesUpdate, "instances_update"},
		{"outside the namespace", "load-balancers:read", ""},
		{"the bare namespace", "compute:", ""},
	}
	for _, tc := range cases {
		if got := tc.in.Relation(); got != tc.want {
			t.Errorf("%s: %q.Relation() = %q, want %q", tc.reason, tc.in, got, tc.want)
		}
	}
}

// TestModelMatchesPermissions keeps model.fga and the Go constants in step: the
// tenant answers to every constant and each resource type to exactly its own.
func TestModelMatchesPermissions(t *testing.T) {
	t.Parallel()
	m, err := compileModel(modelDSL)
	if err != nil {
		t.Fatal(err)
	}
	tenantPerms := m.permissions[TypeTenant]
	if len(tenantPerms) != len(AllPermissions) {
		t.Errorf("compute-tenant defines %d permissions, Go has %d", len(tenantPerms), len(AllPermissions))
	}
	for _, p := range AllPermissions {
		if !tenantPerms[p.Relation()] {
			t.Errorf("compute-tenant lacks %s (%s)", p, p.Relation())
		}
	}
	for typ, perms := range typePermissions {
		if len(m.permissions[typ]) != len(perms) || !m.tenantLinked[typ] || !m.grantable[typ] {
			t.Errorf("%s: %d permissions (want %d), tenant-linked %v, grantable %v", typ, len(m.permissions[typ]), len(perms), m.tenantLinked[typ], m.grantable[typ])
		}
		for _, p := range perms {
			if !m.permissions[typ][p.Relation()] {
				t.Errorf("%s lacks %s", typ, p)
			}
		}
	}
	if len(m.permissions) != len(typePermissions)+3 { // + user, compute-tenant and compute-platform
		t.Errorf("model has %d types, tests know %d", len(m.permissions), len(typePermissions)+3)
	}
}

func TestEmbeddedClosedFailsClosed(t *testing.T) {
	t.Parallel()
	a := newMemory(t)
	ctx := context.Background()
	must(t, a.GrantTenantRole(ctx, tenantA, prnAdmin, RoleAdmin))
	c := Check{prnAdmin, LoadBalancersRead, TenantObject(tenantA)}
	if ok, err := a.Check(ctx, c); err != nil || !ok {
		t.Fatalf("before close: %v, %v", ok, err)
	}
	must(t, a.Close())
	must(t, a.Close()) // twice is fine
	if ok, err := a.Check(ctx, c); !errors.Is(err, ErrUnavailable) || ok {
		t.Errorf("Check after close = %v, %v; want false, ErrUnavailable", ok, err)
	}
	if res, err := a.BatchCheck(ctx, []Check{c}); !errors.Is(err, ErrUnavailable) || res != nil {
		t.Errorf("BatchCheck after close = %v, %v; want nil, ErrUnavailable", res, err)
	}
	if err := a.GrantTenantRole(ctx, tenantA, prnAdmin, RoleAdmin); !errors.Is(err, ErrUnavailable) {
		t.Errorf("grant after close: %v", err)
	}
}

func TestEmbeddedCancelledContextFailsClosed(t *testing.T) {
	t.Parallel()
	a := newMemory(t)
	must(t, a.GrantTenantRole(context.Background(), tenantA, prnAdmin, RoleAdmin))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	ok, err := a.Check(ctx, Check{prnAdmin, LoadBalancersRead, TenantObject(tenantA)})
	if ok || !errors.Is(err, ErrUnavailable) {
		t.Errorf("Check with a cancelled context = %v, %v; want false, ErrUnavailable", ok, err)
	}
}

// TestModelVersioning starts several clients on one engine and store: an
// unchanged model is reused, a changed one is written as a new version.
func TestModelVersioning(t *testing.T) {
	t.Parallel()
	a := newMemory(t)
	ctx := context.Background()
	eng := a.eng
	changedDSL := strings.Replace(modelDSL, "type user\n", "type user\n\ntype compute-audit-marker\n  relations\n    define reader: [user]\n", 1)
	if changedDSL == modelDSL {
		t.Fatal("test model edit did not apply")
	}
	changed, err := compileModel(changedDSL)
	if err != nil {
		t.Fatal(err)
	}
	original, err := compileModel(modelDSL)
	if err != nil {
		t.Fatal(err)
	}
	if !a.ModelWritten() {
		t.Fatal("first start on an empty store wrote no model")
	}
	steps := []struct {
		reason    string
		model     *compiledModel
		wantWrite bool
		wantID    string // "" when a new id is expected
	}{
		{"same model again writes nothing", original, false, a.ModelID()},
		{"a changed model writes a new version", changed, true, ""},
		{"the changed model again writes nothing", changed, false, "changed"},
		{"going back writes the original again", original, true, ""},
	}
	var changedID string
	for _, s := range steps {
		res, err := bootstrap(ctx, eng, "", a.StoreID(), s.model)
		if err != nil {
			t.Fatalf("%s: %v", s.reason, err)
		}
		if res.modelWritten != s.wantWrite {
			t.Errorf("%s: wrote %v, want %v", s.reason, res.modelWritten, s.wantWrite)
		}
		switch s.wantID {
		case "":
			if res.modelID == a.ModelID() || res.modelID == changedID {
				t.Errorf("%s: reused id %s", s.reason, res.modelID)
			}
			if s.model == changed {
				changedID = res.modelID
			}
		case "changed":
			if res.modelID != changedID {
				t.Errorf("%s: id %s, want %s", s.reason, res.modelID, changedID)
			}
		default:
			if res.modelID != s.wantID {
				t.Errorf("%s: id %s, want %s", s.reason, res.modelID, s.wantID)
			}
		}
	}
	// A start by name finds the same store rather than making another.
	byName, err := bootstrap(ctx, eng, "", "", original)
	if err != nil {
		t.Fatal(err)
	}
	if byName.storeID != a.StoreID() || byName.modelWritten {
		t.Errorf("start by name: store %s (want %s), wrote %v", byName.storeID, a.StoreID(), byName.modelWritten)
	}
}
