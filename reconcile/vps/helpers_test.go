package vps_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/digitalocean/godo"

	"better-compute.dev/compute/app"
	"better-compute.dev/compute/app/apptest"
	v1 "better-compute.dev/compute/gen/go/bettercompute/compute/v1"
	"better-compute.dev/compute/lifecycle"
	"better-compute.dev/compute/provider/digitalocean/sim"
	"better-compute.dev/compute/reconcile/reconciletest"
	"better-compute.dev/compute/store"
	"better-compute.dev/compute/testwait"
)

// converge bounds every wait for the reconciler in these tests: generous, since the tests
// assert outcomes, not speed.
const converge = 60 * time.Second

// env is a whole control plane in process with its reconcilers running against a simulator
// with short asynchronous delays.
type env struct {
	s   *apptest.Stack
	sim *sim.Server
	tn  apptest.Tenant
	// token is the tenant's provider token (the simulator's account key).
	token string
	ctx   context.Context
}

// newEnv starts the simulator and the stack with short leases, polls and periodic pass, and
// makes a tenant with a pool quota of limit load balancers and instances.
func newEnv(t *testing.T, tenantID string, limit int64) *env {
	t.Helper()
	return newEnvWith(t, tenantID, limit, nil)
}

// newEnvWith is newEnv with a change to the reconcilers' configuration after the short one.
func newEnvWith(t *testing.T, tenantID string, limit int64, change func(*app.Config)) *env {
	t.Helper()
	return startEnv(t, tenantID, limit, shortSim(3*time.Second), apptest.WithReconcile(), shortReconcile(change))
}

// shortReconcile is the reconcilers' configuration of these tests (short leases, polls and
// periodic pass), then change.
func shortReconcile(change func(*app.Config)) apptest.Option {
	return func(c *app.Config) {
		r := &c.Reconcilers
		r.LeaseTTL, r.PollInterval, r.PeriodicInterval = 5*time.Second, 20*time.Millisecond, time.Second
		r.ProviderPoll, r.DependencyPoll = 100*time.Millisecond, 200*time.Millisecond
		r.BackoffInitial, r.BackoffMax = 50*time.Millisecond, 500*time.Millisecond
		r.DigitalOcean.RequestsPerMinute, r.DigitalOcean.Burst, r.Concurrency = 30000, 100, 8
		if change != nil {
			change(c)
		}
	}
}

// shortSim is the simulator of these tests: short asynchronous delays, certificates verified
// after certVerify.
func shortSim(certVerify time.Duration) sim.Options {
	return sim.Options{
		AcceptAnyToken: true, RequestsPerMinute: 100000, RequestsPerHour: 1000000,
		LoadBalancerActiveDelay: 150 * time.Millisecond, LoadBalancerIPDelay: 250 * time.Millisecond,
		LoadBalancerUpdateDelay: 100 * time.Millisecond, DropletActiveDelay: 100 * time.Millisecond,
		CertificateVerifyDelay: certVerify,
	}
}

// startEnv starts a simulator with o and a stack with opts (without apptest.WithReconcile a test
// drives the passes itself), and a tenant with a pool of limit load balancers.
func startEnv(t *testing.T, tenantID string, limit int64, o sim.Options, opts ...apptest.Option) *env {
	t.Helper()
	simulator := sim.New(o)
	url, err := simulator.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = simulator.Close() })
	s := apptest.Start(t, opts...)
	if !s.App.Config.Reconcile {
		// A stack running reconcilers asserts it itself; this test drives its own runners.
		t.Cleanup(func() { reconciletest.AssertQueued(t, context.Background(), s.App.DB) })
	}
	s.SimulatorURL = url
	tn := s.NewTenant(t, tenantID, "editor")
	tn.PoolID = s.NewPool(t, tn.ID, tn.AccountID, "big", limit)
	return &env{s: s, sim: simulator, tn: tn, token: "do-token-" + tenantID, ctx: context.Background()}
}

// eventually polls cond until it holds, failing the test with cond's last explanation when
// converge passes first.
func eventually(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	testwait.Until(t, converge, what, cond)
}

// instance makes an instance through the API and waits until the reconciler gave it a machine.
func (e *env) instance(t *testing.T, name, subnetID string) store.Instance {
	t.Helper()
	in, err := e.s.App.Resources.CreateInstance(e.tn.Ctx, &v1.CreateInstanceRequest{
		TenantId: e.tn.ID, PoolId: e.tn.PoolID, Name: name, Region: "nyc3", SubnetId: subnetID, Flavor: "small",
	})
	if err != nil {
		t.Fatalf("create instance: %v", err)
	}
	var row store.Instance
	eventually(t, "instance "+in.GetId()+" running", func() (bool, string) {
		row, err = store.GetInstance(e.ctx, e.s.App.DB.Q(), in.GetId())
		return err == nil && row.State == "running" && row.MachineID != "", fmt.Sprintf("%+v %v", row, err)
	})
	return row
}

// lbRequest is a valid regional create request with one http rule.
func (e *env) lbRequest(name string, targets *v1.LoadBalancerTargets) *v1.CreateLoadBalancerRequest {
	return &v1.CreateLoadBalancerRequest{
		TenantId: e.tn.ID, PoolId: e.tn.PoolID, Name: name, Region: "nyc3", Targets: targets, IdempotencyKey: "k-" + name,
		Forwarding: []*v1.ForwardingRule{{EntryProtocol: "http", EntryPort: 80, TargetProtocol: "http", TargetPort: 8080}},
	}
}

// tlsLB creates a managed certificate and a { pool: true } load balancer with an https rule on it.
func (e *env) tlsLB(t *testing.T) (*v1.Certificate, *v1.LoadBalancer) {
	t.Helper()
	cert, err := e.s.App.Resources.CreateCertificate(e.tn.Ctx, &v1.CreateCertificateRequest{
		TenantId: e.tn.ID, AccountId: e.tn.AccountID, Name: "site",
		Source: &v1.CreateCertificateRequest_Managed{Managed: &v1.ManagedCertificate{DnsNames: []string{"site.example.com"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	req := e.lbRequest("tls", pool())
	req.Forwarding = append(req.Forwarding, &v1.ForwardingRule{EntryProtocol: "https", EntryPort: 443, TargetProtocol: "http", TargetPort: 8080, CertificateId: cert.GetId()})
	return cert, e.createLB(t, req)
}

// createLB creates a load balancer through the API.
func (e *env) createLB(t *testing.T, req *v1.CreateLoadBalancerRequest) *v1.LoadBalancer {
	t.Helper()
	lb, err := e.s.App.LoadBalancers.CreateLoadBalancer(e.tn.Ctx, req)
	if err != nil {
		t.Fatalf("create load balancer %s: %v", req.GetName(), err)
	}
	return lb
}

// lbRow reads a load balancer's row.
func (e *env) lbRow(t *testing.T, id string) store.LoadBalancer {
	t.Helper()
	row, err := store.GetLoadBalancer(e.ctx, e.s.App.DB.Q(), id)
	if err != nil {
		t.Fatal(err)
	}
	return row
}

// waitState waits until the load balancer's row is in state.
func (e *env) waitState(t *testing.T, id, state string) store.LoadBalancer {
	t.Helper()
	var row store.LoadBalancer
	eventually(t, "load balancer "+id+" "+state, func() (bool, string) {
		row = e.lbRow(t, id)
		return row.State == state, fmt.Sprintf("state %s, last error %q", row.State, row.LastError)
	})
	return row
}

// snapshot is the simulator account of the tenant.
func (e *env) snapshot(t *testing.T) sim.Snapshot {
	t.Helper()
	snap, err := e.sim.Snapshot(e.token)
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

// providerLB returns the load balancer the simulator holds under id, if any.
func (e *env) providerLB(t *testing.T, id string) (godo.LoadBalancer, bool) {
	t.Helper()
	for _, lb := range e.snapshot(t).LoadBalancers {
		if lb.ID == id {
			return lb, true
		}
	}
	return godo.LoadBalancer{}, false
}

// droplets lists the droplet ids a provider load balancer reaches, as machine ids.
func droplets(lb godo.LoadBalancer) []string {
	out := make([]string, 0, len(lb.DropletIDs))
	for _, id := range lb.DropletIDs {
		out = append(out, strconv.Itoa(id))
	}
	slices.Sort(out)
	return out
}

// machines lists the machine ids of instances, sorted.
func machines(in ...store.Instance) []string {
	out := make([]string, 0, len(in))
	for _, i := range in {
		out = append(out, i.MachineID)
	}
	slices.Sort(out)
	return out
}

// eventTypes lists the types of a resource's events in order.
func (e *env) eventTypes(t *testing.T, resourceID string) []string {
	t.Helper()
	evs, err := store.ListEvents(e.ctx, e.s.App.DB.Q(), e.tn.ID, 0, 1000, resourceID)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, ev := range evs {
		out = append(out, ev.Type)
	}
	return out
}

// quotaUsed reads how much of a quota the tenant uses on its pool.
func (e *env) quotaUsed(t *testing.T, resource string) int64 {
	t.Helper()
	qs, err := store.ListQuotas(e.ctx, e.s.App.DB.Q(), e.tn.ID, e.tn.PoolID)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range qs {
		if q.Resource == resource {
			return q.Used
		}
	}
	return -1
}

// deleteLB deletes a load balancer through the API.
func (e *env) deleteLB(t *testing.T, id string) {
	t.Helper()
	if _, err := e.s.App.LoadBalancers.DeleteLoadBalancer(e.tn.Ctx, &v1.DeleteLoadBalancerRequest{TenantId: e.tn.ID, LoadBalancerId: id}); err != nil {
		t.Fatalf("delete load balancer: %v", err)
	}
}

// pool is the { pool: true } target.
func pool() *v1.LoadBalancerTargets {
	yes := true
	return &v1.LoadBalancerTargets{Pool: &yes}
}

// usage returns the load balancer's metering intervals.
func (e *env) usage(t *testing.T, id string) []store.UsageRecord {
	t.Helper()
	all, err := store.ListUsage(e.ctx, e.s.App.DB.Q(), e.tn.ID, lifecycle.MeterLoadBalancerHours, time.Unix(0, 0), time.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	var out []store.UsageRecord
	for _, u := range all {
		if u.ResourceID == id {
			out = append(out, u)
		}
	}
	return out
}
