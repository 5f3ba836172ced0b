// Package hotupdate measures updates of one hot load balancer: 8 clients update it back to back
// through the core of three replicas on one database of its own, whose reconcilers apply every
// update at the provider (a simulator) meanwhile. It reports, from one run, the deadlocks
// PostgreSQL broke (pg_stat_database), the transactions rerun per update (every transaction
// of the process, the reconcilers' included), and the update latency's p50, p99 and p99/p50.
//
//	go test -run '^$' -bench . -benchtime 1x ./bench/hotupdate
//
// BC_BENCH_SECONDS sets how long the clients update (default 20).
package hotupdate

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"better-compute.dev/compute/app/apptest"
	v1 "better-compute.dev/compute/gen/go/bettercompute/compute/v1"
	"better-compute.dev/compute/store"
	"better-compute.dev/compute/store/storetest"
)

const clients = 8

func BenchmarkHotUpdate(b *testing.B) {
	seconds := 20
	if v, err := strconv.Atoi(os.Getenv("BC_BENCH_SECONDS")); err == nil && v > 0 {
		seconds = v
	}
	replicas, _ := apptest.StartBusyReplicas(b, 3)
	tn := replicas[0].NewTenant(b, "hot", "editor")
	lb := replicas[0].ReadyLoadBalancer(b, tn, "hot")

	for i := 0; i < b.N; i++ {
		deadlocksBefore := storetest.Deadlocks(b, replicas[0].App.DB)
		retriesBefore := store.TransactionRetries()
		var mu sync.Mutex
		var took []time.Duration
		failed := map[string]int{}
		stop := time.Now().Add(time.Duration(seconds) * time.Second)
		var wg sync.WaitGroup
		for c := range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				svc := replicas[c%len(replicas)].App.Services
				for n := 0; time.Now().Before(stop); n++ {
					start := time.Now()
					_, err := svc.LoadBalancers.UpdateLoadBalancer(tn.Ctx, &v1.UpdateLoadBalancerRequest{TenantId: tn.ID, LoadBalancerId: lb.GetId(),
						HealthCheck: &v1.HealthCheck{Protocol: "http", Port: 8080, Path: fmt.Sprintf("/c%d-%d", c, n)}})
					d := time.Since(start)
					mu.Lock()
					took = append(took, d)
					if err != nil {
						failed[err.Error()]++
					}
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		reruns := store.TransactionRetries() - retriesBefore
		deadlocks := storetest.Deadlocks(b, replicas[0].App.DB) - deadlocksBefore
		if len(failed) > 0 {
			b.Errorf("failed updates: %v", failed)
		}
		slices.Sort(took)
		p50, p90, p99, slowest := took[len(took)/2], took[len(took)*9/10], took[len(took)*99/100], took[len(took)-1]
		b.Logf("%d updates in %d s by %d clients: deadlocks %d, reruns %d, p50 %v, p90 %v, p99 %v, slowest %v",
			len(took), seconds, clients, deadlocks, reruns, p50, p90, p99, slowest)
		b.ReportMetric(float64(len(took))/float64(seconds), "updates/s")
		b.ReportMetric(float64(deadlocks), "deadlocks")
		b.ReportMetric(float64(reruns)/float64(len(took)), "reruns/update")
		b.ReportMetric(float64(p50.Microseconds())/1000, "p50-ms")
		b.ReportMetric(float64(p99.Microseconds())/1000, "p99-ms")
		b.ReportMetric(float64(p99)/float64(p50), "p99/p50")
	}
}
