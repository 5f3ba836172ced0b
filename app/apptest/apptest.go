// Package apptest runs the whole control plane in process for tests and benchmarks: a fresh
// migrated schema of the real PostgreSQL, the real OpenFGA engine (memory datastore), the real
// Connect server on a loopback port, and helpers that make tenants, principals and pools through
// the service itself.
package apptest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"better-compute.dev/compute/app"
	"better-compute.dev/compute/core"
	v1 "better-compute.dev/compute/gen/go/bettercompute/compute/v1"
	"better-compute.dev/compute/ids"
	"better-compute.dev/compute/netguard"
	"better-compute.dev/compute/provider/digitalocean/sim"
	"better-compute.dev/compute/reconcile/reconciletest"
	"better-compute.dev/compute/seal"
	"better-compute.dev/compute/store"
	"better-compute.dev/compute/store/storetest"
)

// Stack is a running replica on its own schema.
type Stack struct {
	App        *app.App
	Schema     *storetest.Schema
	AdminToken string
	// AdminCtx calls core as the platform admin.
	AdminCtx context.Context
	// SimulatorURL is the api_url given to accounts NewTenant makes ("" none).
	SimulatorURL string
	HTTP         *http.Client
	// sealKey is the replica's seal key, which StartReplica gives the other replicas.
	sealKey string
}

// Option changes Start.
type Option func(*app.Config)

// WithReconcile runs the reconcilers in the stack.
func WithReconcile() Option { return func(c *app.Config) { c.Reconcile = true } }

// Start runs a stack for the test; it stops at cleanup.
func Start(t testing.TB, opts ...Option) *Stack {
	t.Helper()
	schema := storetest.NewSchema(t)
	return StartOn(context.Background(), t, schema, schema.URL, opts...)
}

// StartOn is Start on a given schema, its database reached at databaseURL (schema.URL, or a proxy
// in front of schema's server), with the replica's database connections opened under ctx:
// store.WithTracer there counts or records every statement the replica sends. Another StartOn
// on the same schema is another replica of one deployment (give it a datastore both share).
func StartOn(ctx context.Context, t testing.TB, schema *storetest.Schema, databaseURL string, opts ...Option) *Stack {
	t.Helper()
	key, err := seal.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	cfg := baseConfig(schema, key.Encode())
	cfg.DatabaseURL = databaseURL
	cfg.OpenFGADatastore, cfg.Replica = "memory", "test"
	for _, o := range opts {
		o(&cfg)
	}
	a := startApp(ctx, t, cfg)
	adminID, token, err := a.Base.BootstrapAdmin(context.Background(), "test-admin")
	if err != nil {
		t.Fatal(err)
	}
	s := newStack(a, schema, adminID, token)
	s.sealKey = cfg.SealKey
	return s
}

// StartReplica runs another replica named replica on s's database and seal key (its own
// authorization engine in memory: call the API through s, which holds the tenants' grants).
// It stops at cleanup.
func StartReplica(t testing.TB, s *Stack, replica string, opts ...Option) *Stack {
	t.Helper()
	cfg := baseConfig(s.Schema, s.sealKey)
	cfg.OpenFGADatastore, cfg.Replica = "memory", replica
	for _, o := range opts {
		o(&cfg)
	}
	r := &Stack{App: startApp(context.Background(), t, cfg), Schema: s.Schema, sealKey: s.sealKey, HTTP: &http.Client{Timeout: 30 * time.Second}}
	r.AdminToken, r.AdminCtx, r.SimulatorURL = s.AdminToken, s.AdminCtx, s.SimulatorURL
	return r
}

// StartReplicas runs n replicas on one schema, as n processes of a deployment share one
// database: each has its own pool, listener and, with WithReconcile, reconcilers, and they
// share the authorization store (OpenFGA on the schema). The admin is bootstrapped once; every
// stack's AdminToken and AdminCtx are that admin's. They stop at cleanup.
func StartReplicas(t testing.TB, n int, opts ...Option) []*Stack {
	t.Helper()
	schema := storetest.NewSchema(t)
	key, err := seal.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	var stacks []*Stack
	var adminID, token string
	for i := range n {
		cfg := baseConfig(schema, key.Encode())
		cfg.OpenFGADatastore, cfg.Replica = "postgres", fmt.Sprintf("r%d", i+1)
		for _, o := range opts {
			o(&cfg)
		}
		// One after the other: the first also migrates the authorization store.
		a := startApp(context.Background(), t, cfg)
		if i == 0 {
			if adminID, token, err = a.Base.BootstrapAdmin(context.Background(), "test-admin"); err != nil {
				t.Fatal(err)
			}
		}
		stacks = append(stacks, newStack(a, schema, adminID, token))
	}
	return stacks
}

// baseConfig is a replica's configuration on schema.
func baseConfig(schema *storetest.Schema, sealKey string) app.Config {
	return app.Config{
		// The simulators of these tests listen on loopback, which production refuses.
		OutboundAllow: netguard.AllowLoopback(),
		Listen:        "127.0.0.1:0", DatabaseURL: schema.URL, SealKey: sealKey, CORSOrigins: []string{"*"},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
}

// startApp starts a replica that stops at cleanup.
func startApp(ctx context.Context, t testing.TB, cfg app.Config) *app.App {
	t.Helper()
	a, err := app.Start(ctx, cfg)
	if err != nil {
		t.Fatalf("apptest: start: %v", err)
	}
	t.Cleanup(func() {
		c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		a.Close(c)
	})
	if cfg.Reconcile {
		// Registered after the close, so it runs first: the replica is still live, and the
		// work-queue invariant holds at every instant, not only once the queue is quiet.
		t.Cleanup(func() { reconciletest.AssertQueued(t, context.Background(), a.DB) })
	}
	return a
}

func newStack(a *app.App, schema *storetest.Schema, adminID, token string) *Stack {
	return &Stack{
		App: a, Schema: schema, AdminToken: token,
		AdminCtx: core.WithCaller(context.Background(), core.Caller{PrincipalID: adminID, PlatformAdmin: true}),
		HTTP:     &http.Client{Timeout: 30 * time.Second},
	}
}

// Tenant is a tenant made by NewTenant with one principal of the given role, an account, and a
// pool in nyc3 and sfo3 (flavor small) with quotas of 10 load balancers and 10 instances.
type Tenant struct {
	ID          string
	PrincipalID string
	Token       string
	Ctx         context.Context // calls core as that principal
	AccountID   string
	PoolID      string
}

// NewTenant makes a tenant through the admin API of core.
func (s *Stack) NewTenant(t testing.TB, id, role string) Tenant {
	t.Helper()
	svc := s.App
	if _, err := svc.Tenancy.CreateTenant(s.AdminCtx, &v1.CreateTenantRequest{TenantId: id, DisplayName: id}); err != nil {
		t.Fatalf("create tenant %s: %v", id, err)
	}
	tn := Tenant{ID: id}
	tn.PrincipalID, tn.Token, tn.Ctx = s.NewPrincipal(t, id, role)
	acct, err := svc.Tenancy.CreateProviderAccount(s.AdminCtx, &v1.CreateProviderAccountRequest{
		TenantId: id, Kind: "digitalocean", Name: "main", Token: "do-token-" + id, ApiUrl: s.SimulatorURL,
	})
	if err != nil {
		t.Fatalf("create account: %v", err)
	}
	tn.AccountID = acct.GetId()
	tn.PoolID = s.NewPool(t, id, tn.AccountID, "main", 10)
	return tn
}

// NewPool makes a pool in nyc3 and sfo3 with quotas of limit for both resources.
func (s *Stack) NewPool(t testing.TB, tenantID, accountID, name string, limit int64) string {
	t.Helper()
	svc := s.App
	pool, err := svc.Pools.CreatePool(s.AdminCtx, &v1.CreatePoolRequest{
		TenantId: tenantID, AccountId: accountID, Name: name, Regions: []string{"nyc3", "sfo3"},
		Policy: &v1.PoolPolicy{Flavors: []*v1.Flavor{{Name: "small", Size: "s-1vcpu-1gb"}}},
	})
	if err != nil {
		t.Fatalf("create pool: %v", err)
	}
	for _, res := range []string{"loadBalancers", "instances"} {
		if _, err := svc.Pools.SetQuota(s.AdminCtx, &v1.SetQuotaRequest{TenantId: tenantID, PoolId: pool.GetId(), Resource: res, Limit: limit}); err != nil {
			t.Fatalf("set quota: %v", err)
		}
	}
	return pool.GetId()
}

// NewPoolLoadBalancers creates n { pool: true } load balancers "lb-<i>" in nyc3 with one http
// rule, through the service as the tenant (benchmarks that need a fleet).
func (s *Stack) NewPoolLoadBalancers(t testing.TB, tn Tenant, poolID string, n int) {
	t.Helper()
	yes := true
	for j := range n {
		name := fmt.Sprintf("lb-%d", j)
		if _, err := s.App.LoadBalancers.CreateLoadBalancer(tn.Ctx, &v1.CreateLoadBalancerRequest{
			TenantId: tn.ID, PoolId: poolID, Name: name, Region: "nyc3", IdempotencyKey: name,
			Targets:    &v1.LoadBalancerTargets{Pool: &yes},
			Forwarding: []*v1.ForwardingRule{{EntryProtocol: "http", EntryPort: 80, TargetProtocol: "http", TargetPort: 8080}},
		}); err != nil {
			t.Fatal(err)
		}
	}
}

// NewPrincipal makes a principal of the tenant with a tenant role ("" for none) and a token.
func (s *Stack) NewPrincipal(t testing.TB, tenantID, role string) (id, token string, ctx context.Context) {
	t.Helper()
	svc := s.App
	p, err := svc.Tenancy.CreatePrincipal(s.AdminCtx, &v1.CreatePrincipalRequest{TenantId: tenantID, Kind: "user", DisplayName: role + " of " + tenantID})
	if err != nil {
		t.Fatalf("create principal: %v", err)
	}
	if role != "" {
		if err := svc.Tenancy.GrantRole(s.AdminCtx, &v1.GrantRoleRequest{TenantId: tenantID, PrincipalId: p.GetId(), Role: role}); err != nil {
			t.Fatalf("grant %s: %v", role, err)
		}
	}
	_, secret, err := svc.Tenancy.CreateToken(s.AdminCtx, &v1.CreateTokenRequest{TenantId: tenantID, PrincipalId: p.GetId()})
	if err != nil {
		t.Fatalf("create token: %v", err)
	}
	return p.GetId(), secret, core.WithCaller(context.Background(), core.Caller{PrincipalID: p.GetId(), TenantID: tenantID})
}

// MachineInstance makes an instance through the API and then records, as the reconciler would,
// that the provider made its machine (so load balancers count it) without running a provider.
func (s *Stack) MachineInstance(t testing.TB, tn Tenant, region, subnetID string) *v1.Instance {
	t.Helper()
	in, err := s.App.Resources.CreateInstance(tn.Ctx, &v1.CreateInstanceRequest{
		TenantId: tn.ID, PoolId: tn.PoolID, Name: "vm", Region: region, SubnetId: subnetID, Flavor: "small",
	})
	if err != nil {
		t.Fatalf("create instance: %v", err)
	}
	id := ids.New("")
	machine := id[len(id)-12:]
	if err := store.SetInstanceState(context.Background(), s.App.DB.Q(), in.GetId(), "running", "m-"+machine, ""); err != nil {
		t.Fatal(err)
	}
	in.MachineId, in.State = "m-"+machine, "running"
	return in
}

// PostJSON calls the JSON mapping and decodes the answer.
func (s *Stack) PostJSON(t testing.TB, path, token string, body any) (int, map[string]any) {
	t.Helper()
	return s.PostJSONWith(t, path, token, body, nil)
}

// PostJSONWith is PostJSON with more request headers.
func (s *Stack) PostJSONWith(t testing.TB, path, token string, body any, header http.Header) (int, map[string]any) {
	t.Helper()
	var buf []byte
	switch b := body.(type) {
	case string:
		buf = []byte(b)
	case []byte:
		buf = b
	default:
		var err error
		if buf, err = json.Marshal(body); err != nil {
			t.Fatal(err)
		}
	}
	req, err := http.NewRequest(http.MethodPost, s.App.URL+path, bytes.NewReader(buf))
	if err != nil {
		t.Fatal(err)
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := s.HTTP.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	out := map[string]any{}
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &out); err != nil {
			t.Fatalf("%s: answer is not JSON (%d): %s", path, resp.StatusCode, raw)
		}
	}
	return resp.StatusCode, out
}

// WithReconcilers tunes the reconcilers of the stack (WithReconcile runs them).
func WithReconcilers(rc app.ReconcileConfig) Option {
	return func(c *app.Config) { c.Reconcilers = rc }
}

// ReadyLoadBalancer creates a load balancer of the tenant on all its pool's machines (HTTP 80 to
// 8080) and waits until the reconcilers made it ready at the provider.
func (s *Stack) ReadyLoadBalancer(t testing.TB, tn Tenant, name string) *v1.LoadBalancer {
	t.Helper()
	yes := true
	lb, err := s.App.LoadBalancers.CreateLoadBalancer(tn.Ctx, &v1.CreateLoadBalancerRequest{
		TenantId: tn.ID, PoolId: tn.PoolID, Name: name, Region: "nyc3", IdempotencyKey: name,
		Targets:    &v1.LoadBalancerTargets{Pool: &yes},
		Forwarding: []*v1.ForwardingRule{{EntryProtocol: "http", EntryPort: 80, TargetProtocol: "http", TargetPort: 8080}},
	})
	if err != nil {
		t.Fatalf("create load balancer %s: %v", name, err)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		got, err := s.App.LoadBalancers.GetLoadBalancer(tn.Ctx, &v1.GetLoadBalancerRequest{TenantId: tn.ID, LoadBalancerId: lb.GetId()})
		if err == nil && got.GetState() == "ready" {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("load balancer %s not ready within a minute: %v %v", name, got.GetState(), err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// StartBusyReplicas runs n replicas with their reconcilers, polling briskly, on a PostgreSQL
// server of the test's own (its statistics, such as pg_stat_database.deadlocks, count this
// test alone), against a DigitalOcean simulator with short delays and no rate limit that
// tenants made by NewTenant use. It is skipped where the PostgreSQL binaries are absent. The
// server is returned for faults (TerminateBackends, Restart).
func StartBusyReplicas(t testing.TB, n int) ([]*Stack, *storetest.Server) {
	t.Helper()
	srv := storetest.StartServer(t)
	t.Setenv(storetest.EnvURL, srv.URL)
	simulator := sim.New(sim.Options{
		AcceptAnyToken: true, RequestsPerMinute: 1 << 20, RequestsPerHour: 1 << 30,
		LoadBalancerActiveDelay: 100 * time.Millisecond, LoadBalancerIPDelay: 100 * time.Millisecond,
		LoadBalancerUpdateDelay: 50 * time.Millisecond,
	})
	url, err := simulator.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = simulator.Close() })
	replicas := StartReplicas(t, n, WithReconcile(), WithReconcilers(app.ReconcileConfig{
		PollInterval: 20 * time.Millisecond, ProviderPoll: 100 * time.Millisecond, DependencyPoll: 200 * time.Millisecond,
		BackoffInitial: 50 * time.Millisecond, BackoffMax: time.Second, PeriodicInterval: 5 * time.Second,
	}))
	for _, r := range replicas {
		r.SimulatorURL = url
	}
	return replicas, srv
}
