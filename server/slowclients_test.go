package server_test

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"better-compute.dev/compute/app"
	"better-compute.dev/compute/app/apptest"
)

// dripBody opens a connection that sends a request's headers and then its body one byte at a time,
// and reports the status the server answered with (0 if none came before give-up).
func dripBody(addr, token, path string, every, giveUp time.Duration) int {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		return -1
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nAuthorization: Bearer %s\r\nContent-Length: 1000\r\n\r\n", path, token)
	status := make(chan int, 1)
	go func() {
		_ = conn.SetReadDeadline(time.Now().Add(giveUp))
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			status <- 0
			return
		}
		resp.Body.Close()
		status <- resp.StatusCode
	}()
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case s := <-status:
			return s
		case <-tick.C:
			if _, err := conn.Write([]byte("{")); err != nil {
				return <-status
			}
		}
	}
}

// TestSlowBodiesAreCutWhileOthersAreServed: connections that drip their bodies are answered
// INVALID_INPUT and closed once the body bound passes, while normal calls keep succeeding.
func TestSlowBodiesAreCutWhileOthersAreServed(t *testing.T) {
	s := apptest.Start(t, func(c *app.Config) { c.BodyReadTimeout = 300 * time.Millisecond })
	tn := s.NewTenant(t, "patient", "viewer")
	addr := strings.TrimPrefix(s.App.URL, "http://")
	const slow = 100
	var cut atomic.Int64
	var wg sync.WaitGroup
	for i := range slow {
		wg.Add(1)
		go func() {
			defer wg.Done()
			path := "/api/compute/loadBalancers/list"
			if i%2 == 1 {
				path = "/bettercompute.compute.v1.LoadBalancerService/ListLoadBalancers"
			}
			if dripBody(addr, tn.Token, path, 50*time.Millisecond, 20*time.Second) == http.StatusBadRequest {
				cut.Add(1)
			}
		}()
	}
	done := make(chan struct{})
	var served, failed atomic.Int64
	go func() {
		defer close(done)
		for cut.Load() < slow && served.Load()+failed.Load() < 10000 {
			status, _ := s.PostJSON(t, "/api/compute/loadBalancers/list", tn.Token, map[string]any{"tenantId": tn.ID})
			if status == http.StatusOK {
				served.Add(1)
			} else {
				failed.Add(1)
			}
			if served.Load() >= 20 && cut.Load() == slow {
				return
			}
		}
	}()
	wg.Wait()
	<-done
	t.Logf("%d of %d slow connections cut with 400; %d normal calls served, %d failed meanwhile", cut.Load(), slow, served.Load(), failed.Load())
	if cut.Load() != slow {
		t.Errorf("%d of %d dripping connections were cut with 400", cut.Load(), slow)
	}
	if failed.Load() != 0 || served.Load() == 0 {
		t.Errorf("normal calls: %d served, %d failed while slow clients dripped", served.Load(), failed.Load())
	}
}
