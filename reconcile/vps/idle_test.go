package vps_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/digitalocean/godo"
	"github.com/google/go-cmp/cmp"

	"better-compute.dev/compute/app"
	"better-compute.dev/compute/contract"
	v1 "better-compute.dev/compute/gen/go/bettercompute/compute/v1"
	"better-compute.dev/compute/provider/digitalocean/sim"
	"better-compute.dev/compute/reconcile/vps"
	"better-compute.dev/compute/store"
)

// The work of an idle fleet follows what changes, not a clock over every resource: these tests
// run with a periodic pass of the longest interval allowed, so that anything they see happen
// was queued by the change itself.

// rarePeriodic sets the periodic pass to its longest interval: it runs once at start, then not
// again within a test.
func rarePeriodic(c *app.Config) { c.Reconcilers.PeriodicInterval = vps.MaxPeriodicInterval }

// periodicEpoch is how many periodic passes were granted so far.
func (e *env) periodicEpoch(t *testing.T) int64 {
	t.Helper()
	w, err := store.GetWorkItem(e.ctx, e.s.App.DB, vps.PeriodicKind, store.PeriodicResourceID)
	if err != nil {
		t.Fatal(err)
	}
	return w.Epoch
}

// An instance that gains its machine is reached at once by the load balancers that target its
// pool or name it: the write recording the machine queued them, no periodic pass ran meanwhile.
func TestInstanceGainingMachineReachedWithoutPeriodicPass(t *testing.T) {
	e := newEnvWith(t, "gains", 10, rarePeriodic)
	a := e.instance(t, "a", "")
	// b's droplet cannot be made for now: b exists without a machine.
	e.sim.SetFaults(sim.Faults{Rate: 1, Methods: []string{"POST"}, Paths: []string{"/v2/droplets"}})
	b, err := e.s.App.Resources.CreateInstance(e.tn.Ctx, &v1.CreateInstanceRequest{
		TenantId: e.tn.ID, PoolId: e.tn.PoolID, Name: "b", Region: "nyc3", Flavor: "small",
	})
	if err != nil {
		t.Fatal(err)
	}
	byPool := e.createLB(t, e.lbRequest("by-pool", pool()))
	byName := e.createLB(t, e.lbRequest("by-name", &v1.LoadBalancerTargets{InstanceIds: []string{a.ID, b.GetId()}}))
	ids := []string{byPool.GetId(), byName.GetId()}
	for _, id := range ids {
		row := e.waitState(t, id, "ready")
		at, _ := e.providerLB(t, row.ProviderID)
		if diff := cmp.Diff(machines(a), droplets(at)); diff != "" {
			t.Fatalf("%s droplets before b has a machine (-want +got):\n%s", id, diff)
		}
	}
	before := e.periodicEpoch(t)

	e.sim.ClearFaults()
	var bRow store.Instance
	eventually(t, "b gains its machine", func() (bool, string) {
		bRow, err = store.GetInstance(e.ctx, e.s.App.DB.Q(), b.GetId())
		return err == nil && bRow.MachineID != "", fmt.Sprintf("%+v %v", bRow, err)
	})
	for _, id := range ids {
		eventually(t, id+" reaches b's machine at the provider", func() (bool, string) {
			row := e.lbRow(t, id)
			at, _ := e.providerLB(t, row.ProviderID)
			want := machines(a, bRow)
			return row.State == "ready" && cmp.Equal(droplets(at), want) && cmp.Equal(row.ReachedMachineIDs, want),
				fmt.Sprintf("state %s, provider droplets %v, reached %v, want %v", row.State, droplets(at), row.ReachedMachineIDs, want)
		})
	}
	if after := e.periodicEpoch(t); after != before {
		t.Errorf("a periodic pass ran meanwhile (epoch %d then %d): the test proves nothing", before, after)
	}
}

// A certificate turning ready queues the load balancer waiting for it in the same write: with
// a dependency poll far longer than the test, the load balancer is still made as soon as the
// certificate is verified.
func TestCertificateReadyQueuesWaitingLoadBalancer(t *testing.T) {
	e := newEnvWith(t, "certwait", 10, func(c *app.Config) {
		rarePeriodic(c)
		c.Reconcilers.DependencyPoll = vps.MaxPeriodicInterval
	})
	in := e.instance(t, "a", "")
	cert, lb := e.tlsLB(t)
	eventually(t, "the load balancer's first pass waits for the certificate", func() (bool, string) {
		w, err := store.GetWorkItem(e.ctx, e.s.App.DB, contract.VPSKind, lb.GetId())
		if err != nil || w.DueAt == nil {
			return false, fmt.Sprintf("%+v %v", w, err)
		}
		// Parked for the dependency poll: due far beyond the test unless something queues it.
		return w.Holder == "" && time.Until(*w.DueAt) > time.Minute, fmt.Sprintf("%+v", w)
	})
	before := e.periodicEpoch(t)
	row := e.waitState(t, lb.GetId(), "ready")
	certRow, err := store.GetCertificate(e.ctx, e.s.App.DB.Q(), cert.GetId())
	if err != nil || certRow.State != "ready" {
		t.Fatalf("certificate %+v %v, want ready", certRow, err)
	}
	at, _ := e.providerLB(t, row.ProviderID)
	if diff := cmp.Diff(machines(in), droplets(at)); diff != "" {
		t.Errorf("droplets (-want +got):\n%s", diff)
	}
	if !slices.ContainsFunc(at.ForwardingRules, func(f godo.ForwardingRule) bool { return f.EntryPort == 443 && f.CertificateID != "" }) {
		t.Errorf("no https rule with the certificate at the provider: %+v", at.ForwardingRules)
	}
	if after := e.periodicEpoch(t); after != before {
		t.Errorf("a periodic pass ran meanwhile (epoch %d then %d)", before, after)
	}
}

// A settled fleet is not queued by the periodic pass: over several passes no load balancer's
// work item is claimed again, while each pass still lists the account (the net is there).
func TestSettledFleetIsNotQueued(t *testing.T) {
	e := newEnv(t, "settled", 10)
	e.instance(t, "a", "")
	var ids []string
	for i := range 4 {
		ids = append(ids, e.createLB(t, e.lbRequest(fmt.Sprintf("lb-%d", i), pool())).GetId())
	}
	for _, id := range ids {
		e.waitState(t, id, "ready")
	}
	// Let the passes that follow the creates (one per load balancer at most) end first.
	waitPeriodicPasses(t, e, 2)
	epochs := map[string]int64{}
	for _, id := range ids {
		w, err := store.GetWorkItem(e.ctx, e.s.App.DB, contract.VPSKind, id)
		if err != nil {
			t.Fatal(err)
		}
		epochs[id] = w.Epoch
	}
	lists := e.sim.Requests()["GET /v2/load_balancers"]
	waitPeriodicPasses(t, e, 3)
	for _, id := range ids {
		w, err := store.GetWorkItem(e.ctx, e.s.App.DB, contract.VPSKind, id)
		if err != nil {
			t.Fatal(err)
		}
		if w.Epoch != epochs[id] || w.DueAt != nil {
			t.Errorf("%s was worked on again with nothing changed: epoch %d then %d, due %v", id, epochs[id], w.Epoch, w.DueAt)
		}
	}
	if got := e.sim.Requests()["GET /v2/load_balancers"]; got <= lists {
		t.Errorf("the periodic passes listed nothing (%d lists before, %d after): the net is not there", lists, got)
	}
}

// waitPeriodicPasses waits until n more periodic passes were granted.
func waitPeriodicPasses(t *testing.T, e *env, n int64) {
	t.Helper()
	from := e.periodicEpoch(t)
	eventually(t, fmt.Sprintf("%d periodic passes", n), func() (bool, string) {
		got := e.periodicEpoch(t)
		return got >= from+n, fmt.Sprintf("epoch %d, want %d", got, from+n)
	})
}

// A trigger that was lost is found by the periodic comparison: an instance recorded deleted
// without queueing the load balancers that reach it (here: written directly) is taken out of
// them, as one recorded with a new machine is added (TestPeriodicPassAddsInstanceWithNewMachine).
func TestLostTriggerFoundByPeriodicPass(t *testing.T) {
	e := newEnv(t, "lost", 10)
	a, b := e.instance(t, "a", ""), e.instance(t, "b", "")
	byPool := e.createLB(t, e.lbRequest("by-pool", pool()))
	byName := e.createLB(t, e.lbRequest("by-name", &v1.LoadBalancerTargets{InstanceIds: []string{a.ID, b.ID}}))
	ids := []string{byPool.GetId(), byName.GetId()}
	for _, id := range ids {
		e.waitState(t, id, "ready")
	}
	if err := store.SetInstanceState(e.ctx, e.s.App.DB.Q(), b.ID, "deleted", "", ""); err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		eventually(t, id+" no longer reaches b", func() (bool, string) {
			row := e.lbRow(t, id)
			at, _ := e.providerLB(t, row.ProviderID)
			return row.State == "ready" && cmp.Equal(droplets(at), machines(a)) && cmp.Equal(row.ReachedMachineIDs, machines(a)),
				fmt.Sprintf("state %s, provider droplets %v, reached %v", row.State, droplets(at), row.ReachedMachineIDs)
		})
	}
}
