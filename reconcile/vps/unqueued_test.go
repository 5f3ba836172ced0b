package vps_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/digitalocean/godo"
	"golang.org/x/oauth2"

	"better-compute.dev/compute/app"
	"better-compute.dev/compute/app/apptest"
	"better-compute.dev/compute/contract"
	v1 "better-compute.dev/compute/gen/go/bettercompute/compute/v1"
	"better-compute.dev/compute/provider/digitalocean/sim"
	"better-compute.dev/compute/reconcile/reconciletest"
	"better-compute.dev/compute/store"
)

// TestNoResourceLeftWithoutWork drives many load balancers (half of them in subnets) with https
// and http2 rules on managed certificates, with instances, over three accounts of one tenant and
// a second tenant's account on the same provider token, through two replicas' reconcilers while
// the provider refuses droplet creates for a while, and checks the work-queue invariant (store/workqueue_unqueued.go) all along: no
// resource that is not resting is ever without a due work item. Everything converges, and
// converges again after the provider lost some of the load balancers while they were updated.
func TestNoResourceLeftWithoutWork(t *testing.T) {
	if testing.Short() {
		t.Skip("stress test")
	}
	// The periodic pass is slowed to a minute so that it cannot hide a lost item.
	slowPeriodic := shortReconcile(func(c *app.Config) {
		c.Reconcilers.PeriodicInterval, c.Reconcilers.LeaseTTL = time.Minute, 2*time.Second
	})
	e := startEnv(t, "ta", 40, shortSim(time.Second), apptest.WithReconcile(), slowPeriodic)
	apptest.StartReplica(t, e.s, "replica-2", apptest.WithReconcile(), slowPeriodic)
	svc, db := e.s.App.Services, e.s.App.DB

	type place struct {
		ctx          context.Context
		tenant, pool string
		account      string
	}
	places := []place{{e.tn.Ctx, e.tn.ID, e.tn.PoolID, e.tn.AccountID}}
	for _, token := range []string{"do-token-ta-2", "do-token-ta-3"} {
		acct, err := svc.Tenancy.CreateProviderAccount(e.s.AdminCtx, &v1.CreateProviderAccountRequest{
			TenantId: e.tn.ID, Kind: "digitalocean", Name: "acct-" + token[len(token)-1:], Token: token, ApiUrl: e.s.SimulatorURL,
		})
		if err != nil {
			t.Fatal(err)
		}
		places = append(places, place{e.tn.Ctx, e.tn.ID, e.s.NewPool(t, e.tn.ID, acct.GetId(), "p"+token[len(token)-1:], 40), acct.GetId()})
	}
	tb := e.s.NewTenant(t, "tb", "editor")
	shared, err := svc.Tenancy.CreateProviderAccount(e.s.AdminCtx, &v1.CreateProviderAccountRequest{
		TenantId: tb.ID, Kind: "digitalocean", Name: "shared", Token: e.token, ApiUrl: e.s.SimulatorURL,
	})
	if err != nil {
		t.Fatal(err)
	}
	places = append(places, place{tb.Ctx, tb.ID, e.s.NewPool(t, tb.ID, shared.GetId(), "shared", 40), shared.GetId()})

	// Watch the invariant from before the first create to the end.
	var (
		mu         sync.Mutex
		violations []string
		checks     int
	)
	stop := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for {
			found, err := store.FindAllUnqueued(e.ctx, db.Q(), contract.WorkKinds, 100)
			mu.Lock()
			checks++
			if err != nil {
				violations = append(violations, err.Error())
			}
			for _, u := range found {
				v := fmt.Sprintf("%s %s is %s with no due work item", u.Kind, u.ResourceID, u.State)
				if !slices.Contains(violations, v) {
					violations = append(violations, v)
				}
			}
			mu.Unlock()
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()

	// The provider refuses droplet creates for the first seconds.
	e.sim.SetFaults(sim.Faults{Rate: 0.7, Kinds: []sim.FaultKind{sim.Fault5xx, sim.FaultSlow, sim.FaultTimeoutAfterCommit}, SlowDelay: 1500 * time.Millisecond, Methods: []string{"POST"}, Paths: []string{"/v2/droplets"}})
	var lbIDs, certIDs []string
	for pi, p := range places {
		// Half the load balancers and an instance of each place sit in a subnet, which they
		// wait for.
		nw, err := svc.Resources.CreateNetwork(p.ctx, &v1.CreateNetworkRequest{TenantId: p.tenant, AccountId: p.account, Name: fmt.Sprintf("net%d", pi)})
		if err != nil {
			t.Fatalf("create network: %v", err)
		}
		sn, err := svc.Resources.CreateSubnet(p.ctx, &v1.CreateSubnetRequest{
			TenantId: p.tenant, NetworkId: nw.GetId(), Name: fmt.Sprintf("sn%d", pi), Region: "nyc3", IpRange: fmt.Sprintf("10.%d.0.0/24", 40+pi),
		})
		if err != nil {
			t.Fatalf("create subnet: %v", err)
		}
		for _, subnet := range []string{"", sn.GetId()} {
			if _, err := svc.Resources.CreateInstance(p.ctx, &v1.CreateInstanceRequest{
				TenantId: p.tenant, PoolId: p.pool, Name: fmt.Sprintf("i%d-%d", pi, len(subnet)), Region: "nyc3", Flavor: "small", SubnetId: subnet,
			}); err != nil {
				t.Fatalf("create instance: %v", err)
			}
		}
		var certs []string
		for c := range 2 {
			cert, err := svc.Resources.CreateCertificate(p.ctx, &v1.CreateCertificateRequest{
				TenantId: p.tenant, AccountId: p.account, Name: fmt.Sprintf("c%d-%d", pi, c),
				Source: &v1.CreateCertificateRequest_Managed{Managed: &v1.ManagedCertificate{DnsNames: []string{fmt.Sprintf("s%d-%d.example.com", pi, c)}}},
			})
			if err != nil {
				t.Fatalf("create certificate: %v", err)
			}
			certs = append(certs, cert.GetId())
		}
		certIDs = append(certIDs, certs...)
		for n := range 5 {
			cert := certs[n%2]
			lb, err := svc.LoadBalancers.CreateLoadBalancer(p.ctx, &v1.CreateLoadBalancerRequest{
				TenantId: p.tenant, PoolId: p.pool, Name: fmt.Sprintf("lb%d-%d", pi, n), Region: "nyc3", Targets: pool(),
				SubnetId:       []string{"", sn.GetId()}[n%2],
				IdempotencyKey: fmt.Sprintf("k%d-%d", pi, n),
				Forwarding: []*v1.ForwardingRule{
					{EntryProtocol: "http", EntryPort: 80, TargetProtocol: "http", TargetPort: 8080},
					{EntryProtocol: "https", EntryPort: 443, TargetProtocol: "http", TargetPort: 8080, CertificateId: cert},
					{EntryProtocol: "http2", EntryPort: 8443, TargetProtocol: "http", TargetPort: 8080, CertificateId: cert},
				},
			})
			if err != nil {
				t.Fatalf("create load balancer: %v", err)
			}
			lbIDs = append(lbIDs, lb.GetId())
		}
	}
	time.Sleep(3 * time.Second)
	e.sim.ClearFaults()

	allReady := func() {
		t.Helper()
		eventually(t, "every load balancer ready", func() (bool, string) {
			lbs, err := store.GetLoadBalancers(e.ctx, db.Q(), lbIDs)
			if err != nil {
				return false, err.Error()
			}
			for _, lb := range lbs {
				if lb.State != "ready" {
					w, _ := store.GetWorkItem(e.ctx, db, contract.VPSKind, lb.ID)
					return false, fmt.Sprintf("%s is %s (%q), item due %v", lb.ID, lb.State, lb.LastError, w.DueAt)
				}
			}
			return len(lbs) == len(lbIDs), fmt.Sprintf("%d of %d rows", len(lbs), len(lbIDs))
		})
	}
	allReady()

	// Then the provider loses some of them (deleted behind the control plane's back) while
	// their tenants update them: each is made again, with new settings.
	httpClient := oauth2.NewClient(context.Background(), oauth2.StaticTokenSource(&oauth2.Token{AccessToken: e.token}))
	client, err := godo.New(httpClient, godo.SetBaseURL(e.sim.URL()+"/"))
	if err != nil {
		t.Fatal(err)
	}
	lost := []int{0, 3, 16} // on the first account and the second tenant's, which share a token
	for _, i := range lost {
		row := e.lbRow(t, lbIDs[i])
		if _, err := client.LoadBalancers.Delete(e.ctx, row.ProviderID); err != nil {
			t.Fatalf("delete at the provider: %v", err)
		}
	}
	for _, i := range lost {
		p, yes := places[i/5], true
		if _, err := svc.LoadBalancers.UpdateLoadBalancer(p.ctx, &v1.UpdateLoadBalancerRequest{
			TenantId: p.tenant, LoadBalancerId: lbIDs[i], RedirectHttpToHttps: &yes,
		}); err != nil {
			t.Fatalf("update load balancer: %v", err)
		}
	}
	allReady()
	close(stop)
	<-watched
	certs, err := store.GetCertificates(e.ctx, db.Q(), certIDs)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range certs {
		if c.State != "ready" {
			t.Errorf("certificate %s is %s", c.ID, c.State)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if checks < 10 {
		t.Errorf("the invariant was checked %d times only", checks)
	}
	for _, v := range violations {
		t.Error(v)
	}
	reconciletest.AssertQueued(t, e.ctx, db)
}

// A load balancer deleted at the provider behind the control plane's back is forgotten by the
// next pass (its provider id dropped, the row back to updating) and made again by the pass after:
// the write that forgets it queues that pass, so nothing waits for the periodic one.
func TestForgottenLoadBalancerStaysQueued(t *testing.T) {
	// No periodic pass within the test: only the forget's own queueing can bring it back.
	e := newEnvWith(t, "forgot", 10, func(c *app.Config) { c.Reconcilers.PeriodicInterval = 5 * time.Minute })
	e.instance(t, "a", "")
	lb := e.createLB(t, e.lbRequest("web", pool()))
	row := e.waitState(t, lb.GetId(), "ready")

	httpClient := oauth2.NewClient(context.Background(), oauth2.StaticTokenSource(&oauth2.Token{AccessToken: e.token}))
	client, err := godo.New(httpClient, godo.SetBaseURL(e.sim.URL()+"/"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.LoadBalancers.Delete(context.Background(), row.ProviderID); err != nil {
		t.Fatalf("delete at the provider: %v", err)
	}
	// Something queues one pass (as the periodic pass or an instance's machine would).
	if err := store.ExecuteTx(e.ctx, e.s.App.DB, func(tx store.Tx) error {
		return store.Enqueue(e.ctx, tx, contract.VPSKind, lb.GetId(), nil)
	}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "made again at the provider", func() (bool, string) {
		got := e.lbRow(t, lb.GetId())
		w, _ := store.GetWorkItem(e.ctx, e.s.App.DB, contract.VPSKind, lb.GetId())
		return got.State == "ready" && got.ProviderID != "" && got.ProviderID != row.ProviderID,
			fmt.Sprintf("state %s provider %q (was %q), item due %v", got.State, got.ProviderID, row.ProviderID, w.DueAt)
	})
	reconciletest.AssertQueued(t, e.ctx, e.s.App.DB)
}

// The periodic pass is the safety net of every kind: a certificate whose item was lost (here
// made idle by hand while the certificate waits for the provider to verify it) is found by the
// invariant's query and queued by the next pass, and then converges.
func TestPeriodicPassQueuesLostWork(t *testing.T) {
	e := newEnv(t, "lostwork", 10)
	cert, err := e.s.App.Resources.CreateCertificate(e.tn.Ctx, &v1.CreateCertificateRequest{
		TenantId: e.tn.ID, AccountId: e.tn.AccountID, Name: "site",
		Source: &v1.CreateCertificateRequest_Managed{Managed: &v1.ManagedCertificate{DnsNames: []string{"site.example.com"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	db := e.s.App.DB
	// Lose the item between two passes, while the certificate is pending at the provider.
	eventually(t, "the certificate's item idled by hand", func() (bool, string) {
		tag, err := db.Pool().Exec(e.ctx, `UPDATE work_items SET due_at = NULL
			WHERE kind = $1 AND resource_id = $2 AND lease_holder IS NULL
			  AND EXISTS (SELECT 1 FROM certificates WHERE id = $2 AND state = 'pending' AND provider_id <> '')`,
			contract.VPSKind, cert.GetId())
		return err == nil && tag.RowsAffected() == 1, fmt.Sprint(err)
	})
	lost, err := store.GetWorkItem(e.ctx, db, contract.VPSKind, cert.GetId())
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "the certificate ready", func() (bool, string) {
		row, err := store.GetCertificate(e.ctx, db.Q(), cert.GetId())
		return err == nil && row.State == "ready", fmt.Sprintf("%+v %v", row, err)
	})
	after, err := store.GetWorkItem(e.ctx, db, contract.VPSKind, cert.GetId())
	if err != nil {
		t.Fatal(err)
	}
	if after.Epoch <= lost.Epoch || after.Generation <= lost.Generation {
		t.Errorf("the item was not queued again: epoch %d -> %d, generation %d -> %d", lost.Epoch, after.Epoch, lost.Generation, after.Generation)
	}
}

// The invariant's queries, kind by kind: a resource that is not resting is reported while it
// has no due item and not once it has one or rests.
func TestUnqueuedQueries(t *testing.T) {
	e := startEnv(t, "queries", 10, shortSim(time.Second)) // no reconcilers: the rows stay as written
	svc, db := e.s.App.Services, e.s.App.DB
	cert, err := svc.Resources.CreateCertificate(e.tn.Ctx, &v1.CreateCertificateRequest{
		TenantId: e.tn.ID, AccountId: e.tn.AccountID, Name: "site",
		Source: &v1.CreateCertificateRequest_Managed{Managed: &v1.ManagedCertificate{DnsNames: []string{"site.example.com"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	nw, err := svc.Resources.CreateNetwork(e.tn.Ctx, &v1.CreateNetworkRequest{TenantId: e.tn.ID, AccountId: e.tn.AccountID, Name: "net"})
	if err != nil {
		t.Fatal(err)
	}
	sn, err := svc.Resources.CreateSubnet(e.tn.Ctx, &v1.CreateSubnetRequest{TenantId: e.tn.ID, NetworkId: nw.GetId(), Name: "sn", Region: "nyc3", IpRange: "10.40.0.0/24"})
	if err != nil {
		t.Fatal(err)
	}
	in, err := svc.Resources.CreateInstance(e.tn.Ctx, &v1.CreateInstanceRequest{TenantId: e.tn.ID, PoolId: e.tn.PoolID, Name: "a", Region: "nyc3", Flavor: "small"})
	if err != nil {
		t.Fatal(err)
	}
	lb := e.createLB(t, e.lbRequest("web", pool()))

	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := db.Pool().Exec(e.ctx, sql, args...); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		kind  store.UnqueuedKind
		table string
		id    string
		rest  string // an update that puts the row at rest
	}{
		{store.UnqueuedLoadBalancer, "load_balancers", lb.GetId(), `UPDATE load_balancers SET state = 'ready', applied_version = spec_version WHERE id = $1`},
		{store.UnqueuedCertificate, "certificates", cert.GetId(), `UPDATE certificates SET state = 'ready' WHERE id = $1`},
		{store.UnqueuedInstance, "instances", in.GetId(), `UPDATE instances SET state = 'running', machine_id = 'm-1' WHERE id = $1`},
		{store.UnqueuedSubnet, "subnets", sn.GetId(), `UPDATE subnets SET state = 'error' WHERE id = $1`},
	}
	for _, c := range cases {
		t.Run(string(c.kind), func(t *testing.T) {
			found := func() []string {
				got, err := store.FindUnqueued(e.ctx, db.Q(), contract.WorkKinds, c.kind, 100)
				if err != nil {
					t.Fatal(err)
				}
				var ids []string
				for _, u := range got {
					ids = append(ids, u.ResourceID)
				}
				return ids
			}
			if got := found(); len(got) != 0 {
				t.Fatalf("queued by its create, yet reported: %v", got)
			}
			exec(`UPDATE work_items SET due_at = NULL WHERE kind = $1 AND resource_id = $2`, contract.VPSKind, c.id)
			if got := found(); !slices.Equal(got, []string{c.id}) {
				t.Errorf("idle and pending: reported %v, want [%s]", got, c.id)
			}
			counts, err := store.CountUnqueued(e.ctx, db.Q(), contract.WorkKinds)
			if err != nil || counts[c.kind] != 1 {
				t.Errorf("count %v %v, want 1 of %s", counts, err, c.kind)
			}
			exec(c.rest, c.id)
			if got := found(); len(got) != 0 {
				t.Errorf("at rest, yet reported: %v", got)
			}
		})
	}
}
