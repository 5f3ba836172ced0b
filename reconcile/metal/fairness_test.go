package metal_test

import (
	"context"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"better-compute.dev/compute/app"
	"better-compute.dev/compute/app/apptest"
	v1 "better-compute.dev/compute/gen/go/bettercompute/compute/v1"
	"better-compute.dev/compute/provider/bmc/redfishsim"
	"better-compute.dev/compute/provider/digitalocean/sim"
	metalrec "better-compute.dev/compute/reconcile/metal"
	"better-compute.dev/compute/store"
)

// hungBMC accepts TCP connections and never answers: a BMC that is wedged, or an address that
// swallows connections. It counts the connections it holds open.
type hungBMC struct {
	ln       net.Listener
	mu       sync.Mutex
	open     int
	accepted int
}

func newHungBMC(t *testing.T) *hungBMC {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := &hungBMC{ln: ln}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			h.mu.Lock()
			h.open++
			h.accepted++
			h.mu.Unlock()
			go func() {
				// Read (and drop) until the client gives up; never write a byte.
				buf := make([]byte, 512)
				for {
					if _, err := c.Read(buf); err != nil {
						break
					}
				}
				c.Close()
				h.mu.Lock()
				h.open--
				h.mu.Unlock()
			}()
		}
	}()
	t.Cleanup(func() { ln.Close() })
	return h
}

func (h *hungBMC) counts() (open, accepted int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.open, h.accepted
}

// TestHungBMCsDoNotStarveOtherWork: four BMCs of one tenant accept TCP and never answer. With
// the whole control plane running (Concurrency 4: metal gets 2 slots, one tenant 1 of them),
// while the hung BMCs' probes still hold their slots, another tenant's healthy node is probed
// and that tenant's load balancers all reach ready. Ordering and counts are asserted, not times:
// none of the hung probes has even failed once (their request timeout is the production
// default) when everything else has converged.
func TestHungBMCsDoNotStarveOtherWork(t *testing.T) {
	t.Parallel()
	simulator := sim.New(sim.Options{
		AcceptAnyToken: true, RequestsPerMinute: 100000, RequestsPerHour: 1000000,
		LoadBalancerActiveDelay: 150 * time.Millisecond, LoadBalancerIPDelay: 250 * time.Millisecond,
	})
	url, err := simulator.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = simulator.Close() })
	s := apptest.Start(t, apptest.WithReconcile(), func(c *app.Config) {
		r := &c.Reconcilers
		r.Concurrency, r.LeaseTTL, r.PollInterval, r.PeriodicInterval = 4, 5*time.Second, 20*time.Millisecond, time.Minute
		r.ProviderPoll, r.DependencyPoll = 100*time.Millisecond, 200*time.Millisecond
		r.BackoffInitial, r.BackoffMax = 50*time.Millisecond, 500*time.Millisecond
		r.DigitalOcean.RequestsPerMinute, r.DigitalOcean.Burst = 30000, 100
	})
	s.SimulatorURL = url
	ctx := context.Background()
	slow := s.NewTenant(t, "hung-bmcs", "editor")
	other := s.NewTenant(t, "healthy", "editor")

	var hung []*hungBMC
	hungNodes := make([]string, 4)
	for range 4 {
		hung = append(hung, newHungBMC(t))
	}
	// Enrollment looks at a Redfish BMC's systems, bounded (core.metalSystemsWait): each hung BMC
	// holds its enrollment that long, so they are enrolled at once, and the connections that
	// look made are not the reconciler's (enrolled, below).
	var wg sync.WaitGroup
	for i, h := range hung {
		wg.Add(1)
		go func() {
			defer wg.Done()
			port := h.ln.Addr().(*net.TCPAddr).Port
			n, err := s.App.Metal.EnrollNode(slow.Ctx, &v1.EnrollNodeRequest{TenantId: slow.ID, Name: fmt.Sprintf("wedged-%d", i),
				Bmc: &v1.MetalBmcSettings{Address: "127.0.0.1", Port: int32(port), Protocol: "redfish", Username: "u", Password: "pw", InsecureTls: true}})
			if err != nil {
				t.Errorf("enroll hung BMC: %v", err)
				return
			}
			hungNodes[i] = n.GetId()
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	enrolled := 0
	for _, h := range hung {
		_, a := h.counts()
		enrolled += a
	}
	held := func() (open, accepted, leased int) {
		accepted = -enrolled
		for _, h := range hung {
			o, a := h.counts()
			open, accepted = open+o, accepted+a
		}
		for _, id := range hungNodes {
			w, err := store.GetWorkItem(ctx, s.App.DB, metalrec.Kind, id)
			if err != nil {
				t.Fatal(err)
			}
			if w.Holder != "" {
				leased++
			}
		}
		return open, accepted, leased
	}
	maxLeased := 0
	wait := func(what string, cond func() (bool, string)) {
		t.Helper()
		deadline := time.Now().Add(time.Minute) // only against a broken build; nothing asserts on it
		for {
			_, _, leased := held()
			maxLeased = max(maxLeased, leased)
			ok, why := cond()
			if ok {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: not reached: %s", what, why)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	// The hung tenant's first probe is on the wire and holds its slot.
	wait("a hung BMC holding a connection", func() (bool, string) {
		open, _, _ := held()
		return open > 0, "no connection reached a hung BMC"
	})

	// Meanwhile: the other tenant's healthy node is probed ...
	bmcSim := redfishsim.New(redfishsim.Config{Username: "operator", Password: simPassword})
	t.Cleanup(bmcSim.Close)
	healthy, err := s.App.Metal.EnrollNode(other.Ctx, &v1.EnrollNodeRequest{TenantId: other.ID, Name: "healthy",
		Bmc: &v1.MetalBmcSettings{Address: bmcSim.Host(), Port: int32(bmcSim.Port()), Protocol: "redfish", Username: "operator",
			Password: simPassword, CaCertPem: string(bmcSim.CertPEM())}})
	if err != nil {
		t.Fatal(err)
	}
	// ... and its load balancers are created.
	yes := true
	var lbs []string
	for i := range 3 {
		lb, err := s.App.LoadBalancers.CreateLoadBalancer(other.Ctx, &v1.CreateLoadBalancerRequest{
			TenantId: other.ID, PoolId: other.PoolID, Name: fmt.Sprintf("web-%d", i), Region: "nyc3",
			Targets: &v1.LoadBalancerTargets{Pool: &yes}, IdempotencyKey: fmt.Sprintf("web-%d", i),
			Forwarding: []*v1.ForwardingRule{{EntryProtocol: "http", EntryPort: 80, TargetProtocol: "http", TargetPort: 8080}},
		})
		if err != nil {
			t.Fatal(err)
		}
		lbs = append(lbs, lb.GetId())
	}
	wait("the healthy node probed", func() (bool, string) {
		n, err := store.GetMetalNode(ctx, s.App.DB.Q(), healthy.GetId())
		return err == nil && n.PendingWork == store.MetalWorkNone && n.PowerState != "",
			fmt.Sprintf("pending %q, power %q, last error %q, %v", n.PendingWork, n.PowerState, n.LastError, err)
	})
	wait("every load balancer ready", func() (bool, string) {
		for _, id := range lbs {
			row, err := store.GetLoadBalancer(ctx, s.App.DB.Q(), id)
			if err != nil || row.State != "ready" {
				return false, fmt.Sprintf("%s: %s %q %v", id, row.State, row.LastError, err)
			}
		}
		return true, ""
	})

	// Everything else converged while the hung BMCs still hold their slots: no hung probe has
	// finished even one attempt, one holds its lease and connection, and never more than one
	// of that tenant's items held a slot at once (its bound within metal's share).
	open, accepted, leased := held()
	if open < 1 || leased < 1 {
		t.Errorf("hung BMCs: %d connections open, %d items leased; want the hung probe still holding its slot", open, leased)
	}
	if maxLeased > 1 || accepted > 1 {
		t.Errorf("the hung tenant held %d slots at once (%d connections accepted); want at most 1", maxLeased, accepted)
	}
	for _, id := range hungNodes {
		n, err := store.GetMetalNode(ctx, s.App.DB.Q(), id)
		if err != nil {
			t.Fatal(err)
		}
		if n.PendingWork != store.MetalWorkProbe || n.LastError != "" {
			t.Errorf("hung node %s finished an attempt before the others converged: pending %q, last error %q", id, n.PendingWork, n.LastError)
		}
	}
}
