// Package authz measures what authorization costs a call: the same core calls (get one load
// balancer; list 50, which batch-checks every item) with the real OpenFGA engine and with an
// authorizer that allows everything, measured in one run and reported as ratios of the median
// and p99 latencies.
//
//	go test -run '^$' -bench . -benchtime 2000x ./bench/authz
package authz

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"better-compute.dev/compute/app/apptest"
	"better-compute.dev/compute/authz"
	"better-compute.dev/compute/core"
	"better-compute.dev/compute/core/events"
	v1 "better-compute.dev/compute/gen/go/bettercompute/compute/v1"
	"better-compute.dev/compute/netguard"
	"better-compute.dev/compute/server"
)

// allowAll is the baseline only: it decides nothing and is never used outside this benchmark.
type allowAll struct{ authz.Authorizer }

func (allowAll) Check(context.Context, authz.Check) (bool, error) { return true, nil }

func (allowAll) BatchCheck(_ context.Context, cs []authz.Check) ([]bool, error) {
	out := make([]bool, len(cs))
	for i := range out {
		out[i] = true
	}
	return out, nil
}

func measure(n int, op func() error) ([]time.Duration, error) {
	lat := make([]time.Duration, n)
	for i := range lat {
		t0 := time.Now()
		if err := op(); err != nil {
			return nil, err
		}
		lat[i] = time.Since(t0)
	}
	slices.Sort(lat)
	return lat, nil
}

func BenchmarkAuthorizationOverhead(b *testing.B) {
	s := apptest.Start(b)
	tn := s.NewTenant(b, "bench", "editor")
	if _, err := s.App.Pools.SetQuota(s.AdminCtx, &v1.SetQuotaRequest{TenantId: tn.ID, PoolId: tn.PoolID, Resource: "loadBalancers", Limit: 1000}); err != nil {
		b.Fatal(err)
	}
	pool := true
	var id string
	for i := range 50 {
		lb, err := s.App.LoadBalancers.CreateLoadBalancer(tn.Ctx, &v1.CreateLoadBalancerRequest{TenantId: tn.ID, PoolId: tn.PoolID, Name: fmt.Sprintf("lb-%d", i), Region: "nyc3",
			Targets:        &v1.LoadBalancerTargets{Pool: &pool},
			Forwarding:     []*v1.ForwardingRule{{EntryProtocol: "http", EntryPort: 80, TargetProtocol: "http", TargetPort: 80}},
			IdempotencyKey: fmt.Sprintf("k%d", i)})
		if err != nil {
			b.Fatal(err)
		}
		id = lb.GetId()
	}
	real := s.App
	bare := server.NewServices(core.NewBase(real.DB, allowAll{real.Base.Authz}, real.Base.Keyring, real.Base.Log, netguard.Policy{}), nil, events.Options{})
	calls := map[string]func(svc server.Services) error{
		"get": func(svc server.Services) error {
			_, err := svc.LoadBalancers.GetLoadBalancer(tn.Ctx, &v1.GetLoadBalancerRequest{TenantId: tn.ID, LoadBalancerId: id})
			return err
		},
		"list50": func(svc server.Services) error {
			lbs, err := svc.LoadBalancers.ListLoadBalancers(tn.Ctx, &v1.ListLoadBalancersRequest{TenantId: tn.ID})
			if err == nil && len(lbs) != 50 {
				err = fmt.Errorf("listed %d", len(lbs))
			}
			return err
		},
	}
	for _, name := range []string{"get", "list50"} {
		call := calls[name]
		b.Run(name, func(b *testing.B) {
			n := max(b.N, 20)
			// Interleave rounds so drift on a noisy machine hits both sides alike.
			var with, without []time.Duration
			for round := range 4 {
				_ = round
				w, err := measure(n/4+1, func() error { return call(real.Services) })
				if err != nil {
					b.Fatal(err)
				}
				wo, err := measure(n/4+1, func() error { return call(bare) })
				if err != nil {
					b.Fatal(err)
				}
				with, without = append(with, w...), append(without, wo...)
			}
			slices.Sort(with)
			slices.Sort(without)
			p := func(l []time.Duration, q float64) time.Duration { return l[int(float64(len(l)-1)*q)] }
			b.ReportMetric(float64(p(with, 0.5).Microseconds()), "p50-us")
			b.ReportMetric(float64(p(with, 0.99).Microseconds()), "p99-us")
			b.ReportMetric(float64(p(with, 0.5))/float64(p(without, 0.5)), "p50-ratio-vs-noauthz")
			b.ReportMetric(float64(p(with, 0.99))/float64(p(without, 0.99)), "p99-ratio-vs-noauthz")
		})
	}
}
