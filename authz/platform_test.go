package authz

import (
	"context"
	"testing"
)

// TestPlatformAdmin: only principals granted admin on compute-platform hold PlatformManage;
// tenant admins do not.
func TestPlatformAdmin(t *testing.T) {
	t.Parallel()
	a := newMemory(t)
	ctx := context.Background()
	grantFixture(t, a)
	must(t, a.GrantPlatformAdmin(ctx, "prn_root"))
	must(t, a.GrantPlatformAdmin(ctx, "prn_root")) // twice is no error
	for _, tc := range []struct {
		principal string
		want      bool
	}{{"prn_root", true}, {prnAdmin, false}, {prnNone, false}} {
		got, err := a.Check(ctx, Check{tc.principal, PlatformManage, PlatformObject})
		if err != nil || got != tc.want {
			t.Errorf("%s: %v %v, want %v", tc.principal, got, err, tc.want)
		}
	}
	if _, err := a.Check(ctx, Check{"prn_root", PlatformManage, TenantObject(tenantA)}); err == nil {
		t.Error("PlatformManage on a tenant must be an unknown permission")
	}
}
