package sim_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/digitalocean/godo"

	"better-compute.dev/compute/provider/digitalocean/sim"
)

// BenchmarkCreateLoadBalancer measures one create over HTTP through godo, the unit of a bulk
// reconciler test.
func BenchmarkCreateLoadBalancer(b *testing.B) {
	srv := sim.New(sim.Options{Tokens: []string{"bench"}, RequestsPerMinute: -1, RequestsPerHour: -1})
	url, err := srv.Start()
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	do := benchClient(b, url)
	ctx := context.Background()
	b.ResetTimer()
	for i := range b.N {
		if _, _, err := do.LoadBalancers.Create(ctx, regionalRequest(fmt.Sprintf("lb-%d", i))); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFindAmongThousand measures a names-filtered lookup in an account of 1000 load
// balancers.
func BenchmarkFindAmongThousand(b *testing.B) {
	srv := sim.New(sim.Options{Tokens: []string{"bench"}, RequestsPerMinute: -1, RequestsPerHour: -1})
	url, err := srv.Start()
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	do := benchClient(b, url)
	ctx := context.Background()
	for i := range 1000 {
		if _, _, err := do.LoadBalancers.Create(ctx, regionalRequest(fmt.Sprintf("lb-%d", i))); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for i := range b.N {
		lbs, _, err := do.LoadBalancers.ListByNames(ctx, []string{fmt.Sprintf("lb-%d", i%1000)}, &godo.ListOptions{PerPage: 200})
		if err != nil || len(lbs) != 1 {
			b.Fatalf("%d %v", len(lbs), err)
		}
	}
}

func benchClient(b *testing.B, url string) *godo.Client {
	c, err := godo.New(nil, godo.SetBaseURL(url+"/"), godo.SetRequestHeaders(map[string]string{"Authorization": "Bearer bench"}))
	if err != nil {
		b.Fatal(err)
	}
	return c
}
