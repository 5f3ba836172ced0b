package loadbalancers_test

import (
	"context"
	"testing"

	"better-compute.dev/compute/app/apptest"
	v1 "better-compute.dev/compute/gen/go/bettercompute/compute/v1"
	"better-compute.dev/compute/store"
)

// TestList: "Returns the tenant's load balancers in the order they were made (at most 1000),
// optionally of one pool or project. Deleted ones only with includeDeleted."
func TestList(t *testing.T) {
	s := apptest.Start(t)
	tn := s.NewTenant(t, "acme", "editor")
	svc := s.App
	second := s.NewPool(t, tn.ID, tn.AccountID, "second", 10)
	prj, err := svc.Tenancy.CreateProject(tn.Ctx, &v1.CreateProjectRequest{TenantId: tn.ID, Name: "shop"})
	if err != nil {
		t.Fatal(err)
	}
	var made []string
	for i := range 6 {
		r := apptest.LoadBalancerRequest(tn, apptest.PoolTargets())
		if i%2 == 1 {
			r.PoolId = second
		}
		if i == 4 {
			r.ProjectId = prj.GetId()
		}
		lb, err := svc.LoadBalancers.CreateLoadBalancer(tn.Ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		made = append(made, lb.GetId())
	}
	ctx := context.Background()
	if _, err := store.RecordLoadBalancerObservation(ctx, s.App.DB.Q(), store.LoadBalancerObservation{ID: made[0], State: "deleted", MarkDeleted: true}); err != nil {
		t.Fatal(err)
	}
	list := func(r *v1.ListLoadBalancersRequest) []string {
		r.TenantId = tn.ID
		lbs, err := svc.LoadBalancers.ListLoadBalancers(tn.Ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, lb := range lbs {
			out = append(out, lb.GetId())
		}
		return out
	}
	for _, tc := range []struct {
		reason string
		req    *v1.ListLoadBalancersRequest
		want   []string
	}{
		{"creation order, deleted left out", &v1.ListLoadBalancersRequest{}, made[1:]},
		{"deleted ones with includeDeleted", &v1.ListLoadBalancersRequest{IncludeDeleted: true}, made},
		{"one pool", &v1.ListLoadBalancersRequest{PoolId: second}, []string{made[1], made[3], made[5]}},
		{"one project", &v1.ListLoadBalancersRequest{ProjectId: prj.GetId()}, []string{made[4]}},
	} {
		if got := list(tc.req); !equal(got, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.reason, got, tc.want)
		}
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
