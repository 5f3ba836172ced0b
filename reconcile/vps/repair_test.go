package vps_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/digitalocean/godo"
	"github.com/google/go-cmp/cmp"
	"golang.org/x/oauth2"

	"better-compute.dev/compute/contract"
	v1 "better-compute.dev/compute/gen/go/bettercompute/compute/v1"
	"better-compute.dev/compute/provider/digitalocean/sim"
	"better-compute.dev/compute/reconcile/vps"
	sdk "better-compute.dev/compute/sdk/go"
	"better-compute.dev/compute/store"
)

// Deleting an instance takes its droplet out of every load balancer that reached it on their
// next provider write, even while the droplet itself cannot be deleted yet; then the droplet
// goes and the instance's quota comes back.
func TestInstanceDeletionUpdatesLoadBalancers(t *testing.T) {
	e := newEnv(t, "gone", 10)
	a, b := e.instance(t, "a", ""), e.instance(t, "b", "")
	byPool := e.createLB(t, e.lbRequest("by-pool", pool()))
	byName := e.createLB(t, e.lbRequest("by-name", &v1.LoadBalancerTargets{InstanceIds: []string{a.ID, b.ID}}))
	for _, id := range []string{byPool.GetId(), byName.GetId()} {
		row := e.waitState(t, id, "ready")
		at, _ := e.providerLB(t, row.ProviderID)
		if diff := cmp.Diff(machines(a, b), droplets(at)); diff != "" {
			t.Fatalf("%s droplets before (-want +got):\n%s", id, diff)
		}
	}
	// The droplet cannot be deleted for now: only the load balancers' own writes can take it
	// out of them (the provider would drop a destroyed droplet by itself).
	e.sim.SetFaults(sim.Faults{Rate: 1, Methods: []string{"DELETE"}, Paths: []string{"/v2/droplets"}})
	if _, err := e.s.App.Resources.DeleteInstance(e.tn.Ctx, &v1.DeleteInstanceRequest{TenantId: e.tn.ID, InstanceId: a.ID}); err != nil {
		t.Fatal(err)
	}
	// "Deleting an instance updates its load balancers at once": the delete's own transaction
	// took it out, so the very next read no longer lists it and the update is announced.
	for _, id := range []string{byPool.GetId(), byName.GetId()} {
		row := e.lbRow(t, id)
		if slices.Contains(row.ReachedInstanceIDs, a.ID) || slices.Contains(row.ReachedMachineIDs, a.MachineID) {
			t.Fatalf("%s still reaches the deleted instance right after its delete: %v %v", id, row.ReachedInstanceIDs, row.ReachedMachineIDs)
		}
		if row.State != "updating" {
			t.Errorf("%s state right after the instance delete = %s, want updating", id, row.State)
		}
		types := e.eventTypes(t, id)
		if n := len(types); n == 0 || types[n-1] != "providerLoadBalancer.updated" {
			t.Errorf("%s events right after the instance delete = %v, want providerLoadBalancer.updated last", id, types)
		}
	}
	for _, id := range []string{byPool.GetId(), byName.GetId()} {
		eventually(t, id+" without the deleted instance's droplet", func() (bool, string) {
			row := e.lbRow(t, id)
			at, _ := e.providerLB(t, row.ProviderID)
			return row.State == "ready" && cmp.Equal(droplets(at), machines(b)) && cmp.Equal(row.ReachedMachineIDs, machines(b)),
				fmt.Sprintf("state %s, provider droplets %v, reached %v", row.State, droplets(at), row.ReachedMachineIDs)
		})
	}
	if !dropletExists(e.snapshot(t), a.MachineID) {
		t.Fatalf("the droplet of the deleted instance must still exist while its deletion fails")
	}
	e.sim.ClearFaults()
	eventually(t, "the instance deleted", func() (bool, string) {
		row, err := store.GetInstance(e.ctx, e.s.App.DB.Q(), a.ID)
		return err == nil && row.State == "deleted" && !dropletExists(e.snapshot(t), a.MachineID), fmt.Sprintf("%+v %v", row, err)
	})
	if got := e.quotaUsed(t, "instances"); got != 1 {
		t.Errorf("instances quota used = %d, want 1 after the refund", got)
	}
}

// An instance that gains a machine without its own pass queueing anything (here: recorded
// directly) is added by the periodic pass.
func TestPeriodicPassAddsInstanceWithNewMachine(t *testing.T) {
	e := newEnv(t, "later", 10)
	a := e.instance(t, "a", "")
	lb := e.createLB(t, e.lbRequest("web", pool()))
	row := e.waitState(t, lb.GetId(), "ready")

	// The instance's own create keeps failing, so its pass never gives it a machine; the
	// machine appears out of band.
	e.sim.SetFaults(sim.Faults{Rate: 1, Methods: []string{"POST"}, Paths: []string{"/v2/droplets"}})
	in, err := e.s.App.Resources.CreateInstance(e.tn.Ctx, &v1.CreateInstanceRequest{
		TenantId: e.tn.ID, PoolId: e.tn.PoolID, Name: "b", Region: "nyc3", Flavor: "small",
	})
	if err != nil {
		t.Fatal(err)
	}
	// Another name than the instance's own, so that its pass cannot adopt the droplet and
	// queue the load balancer itself.
	d, err := e.sim.CreateDroplet(e.token, sim.DropletSeed{Name: "out-of-band", Region: "nyc3"})
	if err != nil {
		t.Fatal(err)
	}
	machine := strconv.Itoa(d.ID)
	if err := store.SetInstanceState(e.ctx, e.s.App.DB.Q(), in.GetId(), "running", machine, ""); err != nil {
		t.Fatal(err)
	}
	before, err := store.GetWorkItem(e.ctx, e.s.App.DB, vps.PeriodicKind, store.PeriodicResourceID)
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "the periodic pass adds the new machine", func() (bool, string) {
		at, _ := e.providerLB(t, row.ProviderID)
		want := sorted(a.MachineID, machine)
		return cmp.Equal(droplets(at), want), fmt.Sprintf("provider droplets %v, want %v", droplets(at), want)
	})
	after, err := store.GetWorkItem(e.ctx, e.s.App.DB, vps.PeriodicKind, store.PeriodicResourceID)
	if err != nil || after.Epoch <= before.Epoch {
		t.Errorf("the periodic pass did not run meanwhile: epoch %d then %d (%v)", before.Epoch, after.Epoch, err)
	}
	e.sim.ClearFaults()
}

// A change made at the provider behind the control plane's back is undone by the periodic
// pass: the droplets and the forwarding rules come back.
func TestDriftAtProviderRepaired(t *testing.T) {
	e := newEnv(t, "drift", 10)
	a := e.instance(t, "a", "")
	lb := e.createLB(t, e.lbRequest("web", pool()))
	row := e.waitState(t, lb.GetId(), "ready")
	before, _ := e.providerLB(t, row.ProviderID)

	client := e.thirdParty(t)
	changed := &godo.LoadBalancerRequest{
		Name: before.Name, Region: "nyc3", VPCUUID: before.VPCUUID,
		ForwardingRules: []godo.ForwardingRule{{EntryProtocol: "tcp", EntryPort: 22, TargetProtocol: "tcp", TargetPort: 22}},
	}
	item, err := store.GetWorkItem(e.ctx, e.s.App.DB, contract.VPSKind, lb.GetId())
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "someone changes the load balancer at the provider", func() (bool, string) {
		_, _, err := client.LoadBalancers.Update(context.Background(), row.ProviderID, changed)
		return err == nil, fmt.Sprint(err)
	})
	// Within one interval: the first periodic pass granted after the change lists the account
	// and queues the load balancer (the pass already running may have listed before it, so at
	// most two are granted until then).
	passes := e.periodicEpoch(t)
	eventually(t, "the periodic pass queues the changed load balancer", func() (bool, string) {
		w, err := store.GetWorkItem(e.ctx, e.s.App.DB, contract.VPSKind, lb.GetId())
		return err == nil && w.Generation > item.Generation, fmt.Sprintf("%+v %v", w, err)
	})
	if after := e.periodicEpoch(t); after > passes+2 {
		t.Errorf("%d periodic passes were granted before the change was queued, want at most 2", after-passes)
	}
	eventually(t, "the drift repaired", func() (bool, string) {
		at, _ := e.providerLB(t, row.ProviderID)
		return cmp.Equal(droplets(at), machines(a)) && len(at.ForwardingRules) == 1 && at.ForwardingRules[0].EntryPort == 80,
			fmt.Sprintf("droplets %v, rules %+v", droplets(at), at.ForwardingRules)
	})
	if got := e.lbRow(t, lb.GetId()); got.State != "ready" || got.ProviderID != row.ProviderID {
		t.Errorf("after the repair: state %s provider %s, want ready %s", got.State, got.ProviderID, row.ProviderID)
	}

	// The repair is published once, naming what someone else changed, and the load balancer
	// shows when (docs/drift.md).
	var drifted []store.Event
	eventually(t, "providerLoadBalancer.drifted published", func() (bool, string) {
		drifted = e.events(t, lb.GetId(), "providerLoadBalancer.drifted")
		return len(drifted) > 0, fmt.Sprint(e.eventTypes(t, lb.GetId()))
	})
	wantParts := []any{"machines", "forwarding"}
	if diff := cmp.Diff(map[string]any{"parts": wantParts}, drifted[0].Data); diff != "" {
		t.Errorf("drifted event data (-want +got):\n%s", diff)
	}
	driftAt := e.lbRow(t, lb.GetId()).LastDriftAt
	if driftAt == nil {
		t.Fatal("last_drift_at not set by the repair")
	}
	e.assertDriftVisible(t, lb.GetId(), *driftAt)

	// Our own update differs from the provider too until it is applied: no drift.
	if _, err := e.s.App.LoadBalancers.UpdateLoadBalancer(e.tn.Ctx, &v1.UpdateLoadBalancerRequest{TenantId: e.tn.ID, LoadBalancerId: lb.GetId(),
		Forwarding: []*v1.ForwardingRule{{EntryProtocol: "http", EntryPort: 80, TargetProtocol: "http", TargetPort: 9090}}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "our update applied", func() (bool, string) {
		at, _ := e.providerLB(t, row.ProviderID)
		got := e.lbRow(t, lb.GetId())
		return got.State == "ready" && got.AppliedVersion == got.SpecVersion && len(at.ForwardingRules) == 1 &&
			at.ForwardingRules[0].TargetPort == 9090, fmt.Sprintf("state %s, rules %+v", got.State, at.ForwardingRules)
	})
	// A few periodic passes more: none finds anything to put back.
	passes = e.periodicEpoch(t)
	eventually(t, "three periodic passes", func() (bool, string) {
		return e.periodicEpoch(t) >= passes+3, fmt.Sprint(e.periodicEpoch(t))
	})
	if n := len(e.events(t, lb.GetId(), "providerLoadBalancer.drifted")); n != 1 {
		t.Errorf("%d drifted events after our own update, want the one of the repair: %v", n, e.eventTypes(t, lb.GetId()))
	}
	if got := e.lbRow(t, lb.GetId()).LastDriftAt; got == nil || !got.Equal(*driftAt) {
		t.Errorf("last_drift_at %v after our own update, want %v", got, driftAt)
	}
}

// A change someone else makes to a TLS load balancer is published without the certificate: the
// event names the part, never a certificate id, the provider's token or an address.
func TestDriftEventCarriesNoSecrets(t *testing.T) {
	e := newEnv(t, "tlsdrift", 10)
	e.instance(t, "a", "")
	cert, lb := e.tlsLB(t)
	row := e.waitState(t, lb.GetId(), "ready")
	before, _ := e.providerLB(t, row.ProviderID)
	var certProviderID string
	for _, f := range before.ForwardingRules {
		certProviderID = max(certProviderID, f.CertificateID)
	}
	changed := &godo.LoadBalancerRequest{
		Name: before.Name, Region: "nyc3", VPCUUID: before.VPCUUID, DropletIDs: before.DropletIDs,
		ForwardingRules: []godo.ForwardingRule{{EntryProtocol: "http", EntryPort: 80, TargetProtocol: "http", TargetPort: 8080}},
	}
	client := e.thirdParty(t)
	eventually(t, "someone takes the https rule out at the provider", func() (bool, string) {
		_, _, err := client.LoadBalancers.Update(context.Background(), row.ProviderID, changed)
		return err == nil, fmt.Sprint(err)
	})
	var drifted []store.Event
	eventually(t, "providerLoadBalancer.drifted published", func() (bool, string) {
		drifted = e.events(t, lb.GetId(), "providerLoadBalancer.drifted")
		return len(drifted) > 0, fmt.Sprint(e.eventTypes(t, lb.GetId()))
	})
	if diff := cmp.Diff(map[string]any{"parts": []any{"forwarding"}}, drifted[0].Data); diff != "" {
		t.Errorf("drifted event data (-want +got):\n%s", diff)
	}
	raw, err := json.Marshal(drifted[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{e.token, cert.GetId(), certProviderID, row.ProviderID, row.Address} {
		if secret != "" && strings.Contains(string(raw), secret) {
			t.Errorf("the drifted event carries %q: %s", secret, raw)
		}
	}
}

// thirdParty is a DigitalOcean client on the tenant's provider account that is not the control
// plane: someone changing the load balancer outside the API.
func (e *env) thirdParty(t *testing.T) *godo.Client {
	t.Helper()
	httpClient := oauth2.NewClient(context.Background(), oauth2.StaticTokenSource(&oauth2.Token{AccessToken: e.token}))
	client, err := godo.New(httpClient, godo.SetBaseURL(e.sim.URL()+"/"))
	if err != nil {
		t.Fatal(err)
	}
	return client
}

// events lists a resource's events of one type in order.
func (e *env) events(t *testing.T, resourceID, eventType string) []store.Event {
	t.Helper()
	evs, err := store.ListEvents(e.ctx, e.s.App.DB.Q(), e.tn.ID, 0, 1000, resourceID)
	if err != nil {
		t.Fatal(err)
	}
	return slices.DeleteFunc(evs, func(ev store.Event) bool { return ev.Type != eventType })
}

// assertDriftVisible reads the load balancer's lastDriftTime through the JSON mapping (get and
// list) and the Go SDK, and the drifted event through events/list.
func (e *env) assertDriftVisible(t *testing.T, id string, at time.Time) {
	t.Helper()
	want := at.UTC().Format(time.RFC3339Nano)
	// The JSON mapping writes the time with 0, 3, 6 or 9 fraction digits (protojson), so the
	// times are compared, not their text.
	isAt := func(v any) bool {
		s, _ := v.(string)
		got, err := time.Parse(time.RFC3339Nano, s)
		return err == nil && got.Equal(at)
	}
	status, got := e.s.PostJSON(t, "/api/compute/loadBalancers/get", e.tn.Token, map[string]any{"tenantId": e.tn.ID, "loadBalancerId": id})
	if lb, _ := got["loadBalancer"].(map[string]any); status != 200 || !isAt(lb["lastDriftTime"]) {
		t.Errorf("JSON get: %d lastDriftTime %v, want %s", status, lb["lastDriftTime"], want)
	}
	status, got = e.s.PostJSON(t, "/api/compute/loadBalancers/list", e.tn.Token, map[string]any{"tenantId": e.tn.ID})
	lbs, _ := got["loadBalancers"].([]any)
	if len(lbs) != 1 || !isAt(lbs[0].(map[string]any)["lastDriftTime"]) {
		t.Errorf("JSON list: %d %v, want one load balancer with lastDriftTime %s", status, got, want)
	}
	resp, err := sdk.New(e.s.App.URL, e.tn.Token).LoadBalancers.GetLoadBalancer(e.ctx,
		connect.NewRequest(&v1.GetLoadBalancerRequest{TenantId: e.tn.ID, LoadBalancerId: id}))
	if err != nil || !resp.Msg.GetLoadBalancer().GetLastDriftTime().AsTime().Equal(at) {
		t.Errorf("SDK get: %v %v, want lastDriftTime %s", resp, err, want)
	}
	status, got = e.s.PostJSON(t, "/api/compute/events/list", e.tn.Token, map[string]any{"tenantId": e.tn.ID,
		"resourceId": id, "types": []string{"providerLoadBalancer.drifted"}})
	evs, _ := got["events"].([]any)
	if status != 200 || len(evs) != 1 {
		t.Errorf("JSON events/list of drifted events: %d %v, want one", status, got)
	}
}

// With a fifth of the provider calls failing (5xx, 429, slow answers, dropped connections and
// timeouts after the change was made) every load balancer still ends ready with the right
// droplets, and no name is made twice at the provider.
func TestFaultsLeaveNoDuplicates(t *testing.T) {
	e := newEnv(t, "faults", 30)
	e.sim.SetFaults(sim.Faults{Rate: 0.2, Seed: 7, SlowDelay: 300 * time.Millisecond, RetryAfter: 200 * time.Millisecond,
		Kinds: []sim.FaultKind{sim.Fault5xx, sim.Fault429, sim.FaultSlow, sim.FaultReset, sim.FaultTimeoutAfterCommit, sim.FaultResetAfterCommit}})
	a, b := e.instance(t, "a", ""), e.instance(t, "b", "")
	const n = 12
	var lbs []string
	for i := range n {
		lbs = append(lbs, e.createLB(t, e.lbRequest(fmt.Sprintf("lb-%d", i), pool())).GetId())
	}
	for _, id := range lbs {
		row := e.waitState(t, id, "ready")
		at, _ := e.providerLB(t, row.ProviderID)
		if diff := cmp.Diff(machines(a, b), droplets(at)); diff != "" {
			t.Errorf("%s droplets (-want +got):\n%s", id, diff)
		}
	}
	if e.sim.FaultsInjected() == 0 {
		t.Fatalf("no fault was injected: the test proves nothing")
	}
	counts := e.sim.LoadBalancerNameCounts(e.token)
	if len(counts) != n {
		t.Errorf("%d load balancer names at the provider, want %d: %v", len(counts), n, counts)
	}
	for name, c := range counts {
		if c != 1 {
			t.Errorf("load balancer %s exists %d times at the provider", name, c)
		}
	}
	names := map[string]int{}
	for _, d := range e.snapshot(t).Droplets {
		names[d.Name]++
	}
	for name, c := range names {
		if c != 1 {
			t.Errorf("droplet %s exists %d times at the provider", name, c)
		}
	}
	t.Logf("%d faults injected", e.sim.FaultsInjected())
}

// dropletExists reports whether the account holds the droplet with machine id.
func dropletExists(snap sim.Snapshot, machine string) bool {
	for _, d := range snap.Droplets {
		if strconv.Itoa(d.ID) == machine {
			return true
		}
	}
	return false
}
