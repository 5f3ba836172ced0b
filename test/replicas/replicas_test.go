// Package replicas_test runs several bc-server replicas as separate processes on one database
// and checks that their reconcilers share the work under leases: a replica killed in the middle
// leaves no duplicate at the provider, and a replica paused past its lease writes nothing once
// another took the lease.
package replicas_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"better-compute.dev/compute/core"
	v1 "better-compute.dev/compute/gen/go/bettercompute/compute/v1"
	"better-compute.dev/compute/netguard"
	"better-compute.dev/compute/provider/digitalocean/sim"
	"better-compute.dev/compute/reconcile/managed"
	"better-compute.dev/compute/seal"
	"better-compute.dev/compute/store"
	"better-compute.dev/compute/store/storetest"
	"better-compute.dev/compute/testwait"
)

// Knobs of the test: short leases and polls so the whole run takes about a minute.
const (
	loadBalancers = 200
	instances     = 4
	leaseTTL      = 3 * time.Second
	pauseFor      = 3 * leaseTTL
	convergeBound = 3 * time.Minute
	providerToken = "do-token-replicas"
)

func TestReplicasConvergeWithKillAndPause(t *testing.T) {
	schema := storetest.NewSchema(t)
	installAudit(t, schema.DB, schema.Name)
	ctx := context.Background()

	simulator := sim.New(sim.Options{
		AcceptAnyToken: true, RequestsPerMinute: 30000, RequestsPerHour: 1000000,
		LoadBalancerActiveDelay: 300 * time.Millisecond, LoadBalancerIPDelay: 500 * time.Millisecond,
		LoadBalancerUpdateDelay: 200 * time.Millisecond, DropletActiveDelay: 200 * time.Millisecond,
	})
	simURL, err := simulator.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = simulator.Close() })
	// A fifth of the provider calls fail, including creates that took effect although the
	// answer says otherwise.
	simulator.SetFaults(sim.Faults{Rate: 0.2, Seed: 42, SlowDelay: 300 * time.Millisecond, RetryAfter: 300 * time.Millisecond,
		Kinds: []sim.FaultKind{sim.Fault5xx, sim.Fault429, sim.FaultSlow, sim.FaultReset, sim.FaultTimeoutAfterCommit, sim.FaultResetAfterCommit}})

	key, err := seal.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	common := []string{
		"BC_SEAL_KEY=" + key.Encode(), "BC_OPENFGA_DATASTORE=postgres", "BC_RECONCILE=true", "BC_LOG_LEVEL=info",
		"BC_LEASE_TTL=" + leaseTTL.String(), "BC_RECONCILE_POLL=50ms", "BC_PERIODIC_INTERVAL=5s",
		"BC_PROVIDER_POLL=250ms", "BC_DEPENDENCY_POLL=500ms", "BC_RECONCILE_BACKOFF=100ms", "BC_RECONCILE_BACKOFF_MAX=2s",
		"BC_DO_REQUESTS_PER_MINUTE=6000", "BC_DO_BURST=50", "BC_RECONCILE_CONCURRENCY=8", "BC_DRAIN_DELAY=0s",
	}
	// Each replica connects under its own application_name, which the audit records.
	start := func(name string) *replica {
		return startReplica(t, name, append(slices.Clone(common), "BC_DATABASE_URL="+schema.URL+"&application_name="+name))
	}
	// One after the other: the first one also migrates the authorization store.
	r1 := start("r1")
	r2 := start("r2")
	r3 := start("r3")

	admin := core.NewBase(schema.DB, nil, nil, nil, netguard.Policy{})
	_, adminToken, err := admin.BootstrapAdmin(ctx, "replicas-admin")
	if err != nil {
		t.Fatal(err)
	}
	survivor := newAPI(r3.url)
	tn := setUpTenant(t, survivor, adminToken, "replicas", providerToken, simURL, loadBalancers)

	var machineIDs []string
	var instanceIDs []string
	for i := range instances {
		in := call(t, tn.token, newAPI([]*replica{r1, r2, r3}[i%3].url).instances.CreateInstance, &v1.CreateInstanceRequest{
			TenantId: tn.tenantID, PoolId: tn.poolID, Name: "vm-" + strconv.Itoa(i), Region: "nyc3", Flavor: "small",
		})
		instanceIDs = append(instanceIDs, in.GetInstance().GetId())
	}
	testwait.Until(t, time.Minute, "every instance running", func() (bool, string) {
		machineIDs = machineIDs[:0]
		for _, id := range instanceIDs {
			row, err := store.GetInstance(ctx, schema.DB.Q(), id)
			if err != nil || row.State != "running" {
				return false, fmt.Sprintf("%s: %s %v", id, row.State, err)
			}
			machineIDs = append(machineIDs, row.MachineID)
		}
		return true, ""
	})
	slices.Sort(machineIDs)

	// Phase one: creates spread over the three replicas. Then r1 is killed in the middle of
	// the work, the remaining creates go to r3 alone, and r2 is paused past its lease.
	yes := true
	create := func(a api, i int) string {
		name := fmt.Sprintf("lb-%03d", i)
		res, err := try(tn.token, a.lbs.CreateLoadBalancer, &v1.CreateLoadBalancerRequest{
			TenantId: tn.tenantID, PoolId: tn.poolID, Name: name, Region: "nyc3", IdempotencyKey: name,
			Targets:    &v1.LoadBalancerTargets{Pool: &yes},
			Forwarding: []*v1.ForwardingRule{{EntryProtocol: "http", EntryPort: 80, TargetProtocol: "http", TargetPort: 8080}},
		})
		if err != nil {
			t.Errorf("create %s: %v", name, err) // not Fatal: this runs on a worker goroutine
			return ""
		}
		return res.GetLoadBalancer().GetId()
	}
	ids := make([]string, loadBalancers)
	var next atomic.Int64
	createRange := func(from, to int, targets []api) {
		next.Store(int64(from))
		var wg sync.WaitGroup
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					i := int(next.Add(1) - 1)
					if i >= to || t.Failed() {
						return
					}
					ids[i] = create(targets[i%len(targets)], i)
				}
			}()
		}
		wg.Wait()
	}
	createRange(0, loadBalancers/2, []api{newAPI(r1.url), newAPI(r2.url), survivor})

	testwait.Until(t, time.Minute, "r1 holding leases", func() (bool, string) {
		return len(leasesHeldBy(t, schema.DB, "r1")) > 0, "r1 holds no lease"
	})
	t.Logf("killing r1 at %s (audit seq %d)", time.Now().UTC().Format(time.RFC3339Nano), auditHead(t, schema.DB))
	r1.signal(t, syscall.SIGKILL)
	<-r1.done
	t.Logf("r1 killed while holding %d leases", len(leasesHeldBy(t, schema.DB, "r1")))

	createRange(loadBalancers/2, loadBalancers*3/4, []api{survivor})
	testwait.Until(t, time.Minute, "r2 holding leases", func() (bool, string) {
		return len(leasesHeldBy(t, schema.DB, "r2")) > 0, "r2 holds no lease"
	})
	r2.signal(t, syscall.SIGSTOP)
	pausedAt := time.Now()
	time.Sleep(300 * time.Millisecond) // statements already sent finish; the process does no more
	held := leasesHeldBy(t, schema.DB, "r2")
	stoppedAt := auditHead(t, schema.DB)
	if len(held) == 0 {
		t.Fatalf("r2 held no lease when paused: the fencing check would prove nothing")
	}
	createRange(loadBalancers*3/4, loadBalancers, []api{survivor})
	if t.Failed() {
		t.FailNow()
	}
	time.Sleep(time.Until(pausedAt.Add(pauseFor)))
	t.Logf("r2 stopped at %s (audit seq %d), resumed at %s", pausedAt.UTC().Format(time.RFC3339Nano), stoppedAt, time.Now().UTC().Format(time.RFC3339Nano))
	r2.signal(t, syscall.SIGCONT)
	t.Logf("r2 paused for %v holding %d leases", pauseFor, len(held))

	// Every load balancer ends ready, reaching exactly the instances' droplets.
	var rows []store.LoadBalancer
	deadline := time.Now().Add(convergeBound)
	for {
		rows, err = store.GetLoadBalancers(ctx, schema.DB.Q(), ids)
		if err != nil {
			t.Fatal(err)
		}
		ready := 0
		for _, row := range rows {
			if row.State == "ready" {
				ready++
			}
		}
		if ready == loadBalancers {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d load balancers ready after %v", ready, loadBalancers, convergeBound)
		}
		time.Sleep(200 * time.Millisecond)
	}
	snap, err := simulator.Snapshot(providerToken)
	if err != nil {
		t.Fatal(err)
	}
	atProvider := map[string][]string{}
	for _, lb := range snap.LoadBalancers {
		var ds []string
		for _, d := range lb.DropletIDs {
			ds = append(ds, strconv.Itoa(d))
		}
		slices.Sort(ds)
		atProvider[lb.ID] = ds
	}
	for _, row := range rows {
		if !slices.Equal(atProvider[row.ProviderID], machineIDs) {
			t.Errorf("%s reaches %v at the provider, want %v", row.ID, atProvider[row.ProviderID], machineIDs)
		}
		if !slices.Equal(row.ReachedMachineIDs, machineIDs) {
			t.Errorf("%s records reaching %v, want %v", row.ID, row.ReachedMachineIDs, machineIDs)
		}
	}

	// Zero duplicates at the provider, for load balancers and droplets alike.
	counts := simulator.LoadBalancerNameCounts(providerToken)
	if len(counts) != loadBalancers {
		t.Errorf("%d load balancer names at the provider, want %d", len(counts), loadBalancers)
	}
	for _, id := range ids {
		if n := counts[managed.ProviderName(id)]; n != 1 {
			t.Errorf("load balancer %s exists %d times at the provider", id, n)
			for _, lb := range snap.LoadBalancers {
				if lb.Name == managed.ProviderName(id) {
					t.Logf("  at the provider: %s created %s", lb.ID, lb.Created)
				}
			}
			for _, w := range auditSince(t, schema.DB, 0) {
				if w.resource == id {
					t.Logf("  audit: %+v", w)
				}
			}
		}
	}
	dropletNames := map[string]int{}
	for _, d := range snap.Droplets {
		dropletNames[d.Name]++
	}
	for name, n := range dropletNames {
		if n != 1 {
			t.Errorf("droplet %s exists %d times at the provider", name, n)
		}
	}

	// The paused replica's leases were taken over, and it wrote nothing under them after it
	// resumed; it noticed and discarded what it was doing.
	writes := auditSince(t, schema.DB, stoppedAt)
	checkFencing(t, writes, "r2", held)
	if lost := strings.Count(r2.logText(), "lease lost"); lost == 0 {
		t.Errorf("r2 never reported a lost lease after resuming")
	} else {
		t.Logf("r2 reported %d lost leases", lost)
	}
	t.Logf("faults injected: %d; writes since the pause: %s", simulator.FaultsInjected(), describe(writes))
}
