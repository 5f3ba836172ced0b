package vps_test

import (
	"fmt"
	"testing"

	"better-compute.dev/compute/store"
)

// TestRequestsPerConvergedLoadBalancer: converging many load balancers costs their creates
// and a few paginated lists, not a get per load balancer per poll: at most 1.2 requests per
// load balancer in all, counted at the simulator (a count, not a timing).
func TestRequestsPerConvergedLoadBalancer(t *testing.T) {
	const n = 100
	e := newEnv(t, "tn_budget", n)
	e.sim.ResetRequests()
	for i := range n {
		e.createLB(t, e.lbRequest(fmt.Sprintf("lb-%d", i), pool()))
	}
	eventually(t, "every load balancer ready", func() (bool, string) {
		rows, err := store.ListLoadBalancers(e.ctx, e.s.App.DB.Q(), store.ListLoadBalancersParams{TenantID: e.tn.ID, Limit: 1000})
		ready := 0
		for _, r := range rows {
			if r.State == "ready" {
				ready++
			}
		}
		return err == nil && ready == n, fmt.Sprintf("%d of %d ready (%v)", ready, n, err)
	})
	got := e.sim.Requests()
	total := 0
	for _, c := range got {
		total += c
	}
	if got["POST /v2/load_balancers"] != n {
		t.Errorf("%d creates for %d load balancers, want one each: %v", got["POST /v2/load_balancers"], n, got)
	}
	if g := got["GET /v2/load_balancers/{id}"]; g != 0 {
		t.Errorf("%d gets by id, want the status polled by listing: %v", g, got)
	}
	if float64(total) > 1.2*n {
		t.Errorf("%d requests for %d load balancers (%.2f each), want at most 1.2 each: %v", total, n, float64(total)/n, got)
	}
	t.Logf("%d requests for %d load balancers: %v", total, n, got)
}
