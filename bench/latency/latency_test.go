// Package latency measures what a call costs when the replica's database is far away, as in the
// card's multi-region deployment: a TCP proxy (storetest.Proxy) between the replica and
// PostgreSQL delays every chunk by half a round-trip time in each direction, and the benchmark
// reports the p50 of load balancer create, get and list through the whole stack at RTT 0, 2, 20
// and 60 ms, with the ratio of each to its budget (create 3 x RTT + 10 ms, get and list RTT + 5 ms).
//
//	go test -run '^$' -bench . -benchtime 1x ./bench/latency
package latency

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"testing"
	"time"

	"better-compute.dev/compute/app"
	"better-compute.dev/compute/app/apptest"
	v1 "better-compute.dev/compute/gen/go/bettercompute/compute/v1"
	"better-compute.dev/compute/store/storetest"
)

// opsPerRTT is how many calls of each kind are timed at each RTT (sequentially: one client,
// so the figures are the call's own latency, not queueing).
const opsPerRTT = 25

func BenchmarkLatency(b *testing.B) {
	s, proxy := startFar(b)
	tn := s.NewTenant(b, "far", "editor")
	// NewTenant's pool allows 10 load balancers; the benchmark makes about a hundred.
	if _, err := s.App.Pools.SetQuota(s.AdminCtx, &v1.SetQuotaRequest{TenantId: tn.ID, PoolId: tn.PoolID, Resource: "loadBalancers", Limit: 100000}); err != nil {
		b.Fatal(err)
	}
	client := &http.Client{Timeout: 60 * time.Second}
	post := func(path, body string) (map[string]any, error) {
		req, _ := http.NewRequest(http.MethodPost, s.App.URL+"/api/compute/"+path, bytes.NewBufferString(body))
		req.Header.Set("Authorization", "Bearer "+tn.Token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		var out map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&out)
		_, _ = io.Copy(io.Discard, resp.Body) // to the end, so the connection is reused
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("%s: HTTP %d %v", path, resp.StatusCode, out)
		}
		return out, nil
	}
	seq := 0
	for _, rtt := range []time.Duration{0, 2 * time.Millisecond, 20 * time.Millisecond, 60 * time.Millisecond} {
		b.Run(fmt.Sprintf("rtt=%s", rtt), func(b *testing.B) {
			proxy.SetRTT(rtt)
			// One untimed call of each kind lets the pool's connections carry the new delay.
			var creates, gets, lists []time.Duration
			var id string
			for i := range opsPerRTT + 1 {
				seq++
				t0 := time.Now()
				out, err := post("loadBalancers/create", fmt.Sprintf(`{"tenantId":%q,"poolId":%q,"name":"lb-%d","region":"nyc3",`+
					`"targets":{"pool":true},"forwarding":[{"entryProtocol":"http","entryPort":80,"targetProtocol":"http","targetPort":8080}],`+
					`"idempotencyKey":"far-%d"}`, tn.ID, tn.PoolID, seq, seq))
				if err != nil {
					b.Fatal(err)
				}
				if i > 0 {
					creates = append(creates, time.Since(t0))
				}
				if lb, ok := out["loadBalancer"].(map[string]any); ok {
					id, _ = lb["id"].(string)
				}
				t0 = time.Now()
				if _, err := post("loadBalancers/get", fmt.Sprintf(`{"tenantId":%q,"loadBalancerId":%q}`, tn.ID, id)); err != nil {
					b.Fatal(err)
				}
				if i > 0 {
					gets = append(gets, time.Since(t0))
				}
				t0 = time.Now()
				if _, err := post("loadBalancers/list", fmt.Sprintf(`{"tenantId":%q}`, tn.ID)); err != nil {
					b.Fatal(err)
				}
				if i > 0 {
					lists = append(lists, time.Since(t0))
				}
			}
			ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
			c, g, l := p50(creates), p50(gets), p50(lists)
			b.ReportMetric(ms(c), "create-p50-ms")
			b.ReportMetric(ms(g), "get-p50-ms")
			b.ReportMetric(ms(l), "list-p50-ms")
			// Budgets of issue "request path at production cost": a ratio <= 1 meets it.
			b.ReportMetric(float64(c)/float64(3*rtt+10*time.Millisecond), "create-vs-budget")
			b.ReportMetric(float64(g)/float64(rtt+5*time.Millisecond), "get-vs-budget")
			b.ReportMetric(float64(l)/float64(rtt+5*time.Millisecond), "list-vs-budget")
		})
	}
	proxy.SetRTT(0)
}

// startFar starts a replica whose database is reached through a delaying proxy (RTT 0 until
// set), with its configuration adjusted by configure.
func startFar(b *testing.B, configure ...apptest.Option) (*apptest.Stack, *storetest.Proxy) {
	var proxy *storetest.Proxy
	opts := append([]apptest.Option{func(c *app.Config) {
		u, err := url.Parse(c.DatabaseURL)
		if err != nil {
			b.Fatal(err)
		}
		if proxy, err = storetest.StartProxy(u.Host); err != nil {
			b.Fatal(err)
		}
		u.Host = proxy.Addr()
		c.DatabaseURL = u.String()
	}}, configure...)
	s := apptest.Start(b, opts...)
	b.Cleanup(proxy.Close)
	return s, proxy
}

func p50(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}
