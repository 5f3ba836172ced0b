package authztest

import (
	"context"
	"testing"

	"better-compute.dev/compute/authz"
)

func TestWithRoles(t *testing.T) {
	t.Parallel()
	a := WithRoles(t, Grant{Tenant: "ten_1", Principal: "prn_1", Role: authz.RoleEditor})
	cases := []struct {
		reason string
		check  authz.Check
		want   bool
	}{
		{"the granted editor manages on its tenant", authz.Check{Principal: "prn_1", Permission: authz.LoadBalancersManage, Object: authz.TenantObject("ten_1")}, true},
		{"nothing on another tenant", authz.Check{Principal: "prn_1", Permission: authz.LoadBalancersRead, Object: authz.TenantObject("ten_2")}, false},
	}
	for _, tc := range cases {
		got, err := a.Check(context.Background(), tc.check)
		if err != nil || got != tc.want {
			t.Errorf("%s: got %v, %v; want %v", tc.reason, got, err, tc.want)
		}
	}
}
