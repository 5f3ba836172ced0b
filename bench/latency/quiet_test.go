package latency

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"better-compute.dev/compute/app"
	"better-compute.dev/compute/authz"
	v1 "better-compute.dev/compute/gen/go/bettercompute/compute/v1"
	"google.golang.org/protobuf/proto"
)

// Shape of BenchmarkQuietTenants: many tenants, each calling rarely, as a large deployment's
// consoles and SDK clients do.
const (
	quietTenants = 1000
	quietEvery   = 5 * time.Second
	quietRounds  = 4 // the first is not timed: it follows the set-up, not a pause
	quietRTT     = 20 * time.Millisecond
)

// BenchmarkQuietTenants: 1,000 tenants each get one load balancer once every 5 s, with the
// database (and the OpenFGA engine on it, serve configuration) 20 ms away through the proxy.
// Every call comes after a pause far longer than the caches' staleness bound, so it is answered
// from memory only if the caches are kept by change rather than by clock. Reports get p50 and
// p99 and their ratios to the goals (p50 <= RTT + 5 ms, p99 <= 3 x RTT), and the engine checks
// per get where the authorizer counts them.
//
//	go test -run '^$' -bench QuietTenants -benchtime 1x -timeout 30m ./bench/latency
func BenchmarkQuietTenants(b *testing.B) {
	// Serve configuration: the OpenFGA engine keeps its tuples in the same (far) database.
	s, proxy := startFar(b, func(c *app.Config) { c.OpenFGADatastore = "postgres" })
	client := &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: quietTenants}}
	post := func(token, path, body string) error {
		req, _ := http.NewRequest(http.MethodPost, s.App.URL+"/api/compute/"+path, bytes.NewBufferString(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s: HTTP %d %s", path, resp.StatusCode, out)
		}
		return nil
	}

	// Set-up at RTT 0: the tenants, each with an editor's token and one load balancer.
	type quiet struct{ token, get string }
	tenants := make([]quiet, quietTenants)
	setup := time.Now()
	for i := range tenants {
		tn := s.NewTenant(b, fmt.Sprintf("q%04d", i), "editor")
		lb, err := s.App.LoadBalancers.CreateLoadBalancer(tn.Ctx, &v1.CreateLoadBalancerRequest{
			TenantId: tn.ID, PoolId: tn.PoolID, Name: "quiet", Region: "nyc3", IdempotencyKey: "quiet",
			Targets:    &v1.LoadBalancerTargets{Pool: proto.Bool(true)},
			Forwarding: []*v1.ForwardingRule{{EntryProtocol: "http", EntryPort: 80, TargetProtocol: "http", TargetPort: 8080}},
		})
		if err != nil {
			b.Fatal(err)
		}
		tenants[i] = quiet{token: tn.Token, get: fmt.Sprintf(`{"tenantId":%q,"loadBalancerId":%q}`, tn.ID, lb.GetId())}
	}
	b.Logf("set-up of %d tenants took %v", quietTenants, time.Since(setup))

	proxy.SetRTT(quietRTT)
	defer proxy.SetRTT(0)
	var (
		mu     sync.Mutex
		timed  []time.Duration
		failed error
	)
	// round runs calls of every tenant spread evenly over one period (200 calls a second in
	// all), each tenant's first call at start + its offset, and returns when all are answered.
	round := func(start time.Time, calls int, record bool) {
		var wg sync.WaitGroup
		for i, tn := range tenants {
			wg.Add(1)
			go func() {
				defer wg.Done()
				offset := time.Duration(i) * quietEvery / quietTenants
				var mine []time.Duration
				for r := range calls {
					time.Sleep(time.Until(start.Add(offset + time.Duration(r)*quietEvery)))
					t0 := time.Now()
					if err := post(tn.token, "loadBalancers/get", tn.get); err != nil {
						mu.Lock()
						failed = err
						mu.Unlock()
						return
					}
					mine = append(mine, time.Since(t0))
				}
				if record {
					mu.Lock()
					timed = append(timed, mine...)
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
	}
	// An untimed first call per tenant (the first call of a principal on a replica is cold by
	// nature), then, after a whole period of quiet, the timed calls: each comes quietEvery after
	// the same tenant's previous one.
	round(time.Now(), 1, false)
	time.Sleep(quietEvery)
	checks0, counted := authz.EngineChecks(s.App.Authz)
	round(time.Now(), quietRounds-1, true)
	if failed != nil {
		b.Fatal(failed)
	}
	slices.Sort(timed)
	hist := map[int]int{}
	for _, d := range timed {
		hist[int(d/(10*time.Millisecond))*10]++
	}
	b.Logf("timed gets by latency (10 ms buckets, lower bound in ms: count): %v; slowest %v", hist, timed[len(timed)-1])
	p50, p99 := timed[len(timed)/2], timed[len(timed)*99/100]
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(ms(p50), "get-p50-ms")
	b.ReportMetric(ms(p99), "get-p99-ms")
	b.ReportMetric(float64(p50)/float64(quietRTT+5*time.Millisecond), "p50-vs-goal")
	b.ReportMetric(float64(p99)/float64(3*quietRTT), "p99-vs-goal")
	b.ReportMetric(float64(len(timed)), "gets-timed")
	if checks, ok := authz.EngineChecks(s.App.Authz); ok && counted {
		b.ReportMetric(float64(checks-checks0)/float64(len(timed)), "engine-checks/get")
	}
}
