// Package slowclients measures what clients that drip their request bodies cost everyone else:
// normal list calls' p50 and p99 with no slow clients, then with 200 connections that keep
// dripping bodies one byte every 100 ms (each cut at the body bound and reopened at once), in one
// run, reported as ratios.
//
//	go test -run '^$' -bench . -benchtime 500x ./bench/slowclients
package slowclients

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"better-compute.dev/compute/app"
	"better-compute.dev/compute/app/apptest"
)

func drip(ctx context.Context, addr string) {
	for ctx.Err() == nil {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			time.Sleep(10 * time.Millisecond)
			continue
		}
		fmt.Fprintf(conn, "POST /api/compute/loadBalancers/list HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n")
		for ctx.Err() == nil {
			if _, err := conn.Write([]byte(" ")); err != nil {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		conn.Close()
	}
}

func BenchmarkNormalCallsBesideSlowClients(b *testing.B) {
	s := apptest.Start(b, func(c *app.Config) { c.BodyReadTimeout = time.Second })
	tn := s.NewTenant(b, "bench", "viewer")
	call := func() time.Duration {
		t0 := time.Now()
		status, _ := s.PostJSON(b, "/api/compute/loadBalancers/list", tn.Token, map[string]any{"tenantId": tn.ID})
		if status != http.StatusOK {
			b.Fatalf("list: HTTP %d", status)
		}
		return time.Since(t0)
	}
	measure := func(n int) []time.Duration {
		lat := make([]time.Duration, n)
		for i := range lat {
			lat[i] = call()
		}
		slices.Sort(lat)
		return lat
	}
	pct := func(l []time.Duration, p float64) float64 { return float64(l[int(float64(len(l)-1)*p)]) }
	n := max(b.N, 100)
	alone := measure(n)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range 200 {
		wg.Add(1)
		go func() { defer wg.Done(); drip(ctx, strings.TrimPrefix(s.App.URL, "http://")) }()
	}
	time.Sleep(500 * time.Millisecond)
	b.ResetTimer()
	beside := measure(n)
	b.StopTimer()
	cancel()
	wg.Wait()
	b.ReportMetric(pct(beside, 0.5)/pct(alone, 0.5), "p50-ratio-slow-vs-none")
	b.ReportMetric(pct(beside, 0.99)/pct(alone, 0.99), "p99-ratio-slow-vs-none")
	b.ReportMetric(pct(alone, 0.99)/1e6, "p99-ms-none")
	b.ReportMetric(pct(beside, 0.99)/1e6, "p99-ms-slow")
}
