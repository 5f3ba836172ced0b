// Package creates measures load balancer creates through the whole stack — JSON mapping over
// HTTP, validation, authentication, OpenFGA, one SERIALIZABLE transaction with quota booking,
// event and work item — against a bare pgx insert transaction measured in the same run, at 1, 8
// and 32 concurrent clients. The figures that matter are the ratios: these machines are noisy.
//
//	go test -run '^$' -bench . -benchtime 300x ./bench/creates
package creates

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"better-compute.dev/compute/app/apptest"
	v1 "better-compute.dev/compute/gen/go/bettercompute/compute/v1"
	"better-compute.dev/compute/store"
)

// run spreads n operations over c workers and returns their latencies and the wall time.
func run(n, c int, op func(i int) error) ([]time.Duration, time.Duration, error) {
	lat := make([]time.Duration, n)
	var next atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	start := time.Now()
	for range c {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				t0 := time.Now()
				if err := op(i); err != nil {
					firstErr.CompareAndSwap(nil, err)
				}
				lat[i] = time.Since(t0)
			}
		}()
	}
	wg.Wait()
	wall := time.Since(start)
	if e, ok := firstErr.Load().(error); ok {
		return nil, 0, e
	}
	slices.Sort(lat)
	return lat, wall, nil
}

// profileFull writes a CPU profile of the full-stack phase alone to the directory named by
// BC_BENCH_PROFILE (one file per case), so the request stack's cost can be read apart from
// the baselines'.
func profileFull(b *testing.B, clients, tenants int) func() {
	dir := os.Getenv("BC_BENCH_PROFILE")
	if dir == "" {
		return func() {}
	}
	f, err := os.Create(filepath.Join(dir, fmt.Sprintf("full-c%d-t%d.pprof", clients, tenants)))
	if err != nil {
		b.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		b.Fatal(err)
	}
	return func() { pprof.StopCPUProfile(); f.Close() }
}

// processCPU is the CPU time this process has used (user + system).
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// machineCPU is the busy CPU time of the whole machine (every core, user + nice + system +
// irq + softirq) from /proc/stat, or 0 where there is none.
func machineCPU() time.Duration {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 8 || f[0] != "cpu" {
		return 0
	}
	var ticks int64
	for _, i := range []int{1, 2, 3, 6, 7} {
		v, err := strconv.ParseInt(f[i], 10, 64)
		if err != nil {
			return 0
		}
		ticks += v
	}
	return time.Duration(ticks) * time.Second / 100 // USER_HZ is 100 on Linux
}

func pct(lat []time.Duration, p float64) time.Duration { return lat[int(float64(len(lat)-1)*p)] }

func BenchmarkCreate(b *testing.B) {
	s := apptest.Start(b)
	// Creates of one tenant in one pool serialize on its quota row and its event counter; 32
	// tenants show what the same load does when it is spread, as real traffic is.
	tenants := make([]apptest.Tenant, 32)
	for i := range tenants {
		tenants[i] = s.NewTenant(b, fmt.Sprintf("bench-%d", i), "editor")
		if _, err := s.App.Pools.SetQuota(s.AdminCtx, &v1.SetQuotaRequest{TenantId: tenants[i].ID, PoolId: tenants[i].PoolID, Resource: "loadBalancers", Limit: 100000}); err != nil {
			b.Fatal(err)
		}
	}
	ctx := context.Background()
	if _, err := s.App.DB.Q().Exec(ctx, `CREATE TABLE bench_rows (id TEXT PRIMARY KEY, body JSONB NOT NULL, created_at TIMESTAMPTZ NOT NULL DEFAULT now())`); err != nil {
		b.Fatal(err)
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}, Timeout: 60 * time.Second}
	var seq atomic.Int64
	spread := 1
	create := func(i int) error {
		k := seq.Add(1)
		tn := tenants[i%spread]
		body := fmt.Sprintf(`{"tenantId":%q,"poolId":%q,"name":"lb-%d","region":"nyc3","targets":{"pool":true},`+
			`"forwarding":[{"entryProtocol":"http","entryPort":80,"targetProtocol":"http","targetPort":8080}],"idempotencyKey":"b-%d"}`, tn.ID, tn.PoolID, k, k)
		req, _ := http.NewRequest(http.MethodPost, s.App.URL+"/api/compute/loadBalancers/create", bytes.NewBufferString(body))
		req.Header.Set("Authorization", "Bearer "+tn.Token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		// Read the answer to its end: a body closed unread makes the transport drop the
		// connection, and every create would then pay a dial and an accept.
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("create: HTTP %d", resp.StatusCode)
		}
		return nil
	}
	// direct is the same create called on the core service, without HTTP, JSON, validation
	// or authentication: what is left is authorization and the database, so create vs direct
	// says what the request stack costs and direct vs bare what the database work costs.
	direct := func(i int) error {
		k := seq.Add(1)
		tn := tenants[i%spread]
		_, err := s.App.LoadBalancers.CreateLoadBalancer(tn.Ctx, &v1.CreateLoadBalancerRequest{
			TenantId: tn.ID, PoolId: tn.PoolID, Name: fmt.Sprintf("lb-%d", k), Region: "nyc3",
			Targets:        &v1.LoadBalancerTargets{Pool: proto.Bool(true)},
			Forwarding:     []*v1.ForwardingRule{{EntryProtocol: "http", EntryPort: 80, TargetProtocol: "http", TargetPort: 8080}},
			IdempotencyKey: fmt.Sprintf("b-%d", k),
		})
		return err
	}
	bare := func(int) error {
		k := seq.Add(1)
		return store.ExecuteTx(ctx, s.App.DB, func(tx store.Tx) error {
			_, err := tx.Exec(ctx, `INSERT INTO bench_rows (id, body) VALUES ($1, '{"name":"lb"}')`, fmt.Sprintf("r-%d", k))
			return err
		})
	}
	// hot is the floor a tenant's creates can reach while they must book one shared quota row:
	// the same SERIALIZABLE transaction as bare, plus the conditional UPDATE of the tenant's
	// quota row that every create makes.
	hot := func(i int) error {
		k := seq.Add(1)
		tn := tenants[i%spread]
		return store.ExecuteTx(ctx, s.App.DB, func(tx store.Tx) error {
			if _, err := tx.Exec(ctx, `UPDATE quotas SET used = used + 1 WHERE tenant_id = $1 AND pool_id = $2 AND resource = 'loadBalancers' AND used < quota_limit`, tn.ID, tn.PoolID); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `INSERT INTO bench_rows (id, body) VALUES ($1, '{"name":"lb"}')`, fmt.Sprintf("r-%d", k))
			return err
		})
	}
	for _, tc := range []struct{ clients, tenants int }{{1, 1}, {8, 1}, {32, 1}, {8, 8}, {32, 32}} {
		c := tc.clients
		b.Run(fmt.Sprintf("clients=%d/tenants=%d", tc.clients, tc.tenants), func(b *testing.B) {
			spread = tc.tenants
			n := max(b.N, c)
			base, baseWall, err := run(n, c, bare)
			if err != nil {
				b.Fatal(err)
			}
			hotLat, hotWall, err := run(n, c, hot)
			if err != nil {
				b.Fatal(err)
			}
			_, directWall, err := run(n, c, direct)
			if err != nil {
				b.Fatal(err)
			}
			retriesBefore := store.TransactionRetries()
			stopProfile := profileFull(b, tc.clients, tc.tenants)
			goCPU0, allCPU0 := processCPU(), machineCPU()
			b.ResetTimer()
			full, fullWall, err := run(n, c, create)
			b.StopTimer()
			goCPU, otherCPU := processCPU()-goCPU0, machineCPU()-allCPU0
			otherCPU -= goCPU
			stopProfile()
			if err != nil {
				b.Fatal(err)
			}
			fullRate, baseRate := float64(n)/fullWall.Seconds(), float64(n)/baseWall.Seconds()
			b.ReportMetric(fullRate, "creates/s")
			if goCPU > 0 && otherCPU > 0 {
				// Where a create's CPU goes on this machine: this process (server and client)
				// and everything else (PostgreSQL, mostly).
				b.ReportMetric(float64(goCPU.Microseconds())/1000/float64(n), "go-cpu-ms/create")
				b.ReportMetric(float64(otherCPU.Microseconds())/1000/float64(n), "other-cpu-ms/create")
			}
			b.ReportMetric(float64(store.TransactionRetries()-retriesBefore)/float64(n), "tx-retries/create")
			b.ReportMetric(float64(pct(full, 0.5).Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(pct(full, 0.99).Microseconds())/1000, "p99-ms")
			b.ReportMetric(fullRate/baseRate, "throughput-ratio-vs-pgx")
			b.ReportMetric(fullRate/(float64(n)/hotWall.Seconds()), "throughput-ratio-vs-quota-tx")
			b.ReportMetric((float64(n)/directWall.Seconds())/baseRate, "core-call-ratio-vs-pgx")
			b.ReportMetric(float64(pct(hotLat, 0.99))/float64(pct(hotLat, 0.5)), "quota-tx-p99/p50")
			b.ReportMetric(float64(pct(full, 0.99))/float64(pct(full, 0.5)), "p99/p50")
			b.ReportMetric(float64(pct(full, 0.5))/float64(pct(base, 0.5)), "p50-ratio-vs-pgx")
			b.ReportMetric(float64(pct(full, 0.99))/float64(pct(base, 0.99)), "p99-ratio-vs-pgx")
		})
	}
}
