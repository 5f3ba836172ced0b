package metal_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"better-compute.dev/compute/authz"
	"better-compute.dev/compute/core"
	"better-compute.dev/compute/core/events"
	v1 "better-compute.dev/compute/gen/go/bettercompute/compute/v1"
	"better-compute.dev/compute/ids"
	"better-compute.dev/compute/netguard"
	"better-compute.dev/compute/provider/bmc"
	"better-compute.dev/compute/provider/bmc/redfishsim"
	"better-compute.dev/compute/reconcile"
	metalrec "better-compute.dev/compute/reconcile/metal"
	"better-compute.dev/compute/reconcile/reconciletest"
	"better-compute.dev/compute/seal"
	"better-compute.dev/compute/server"
	"better-compute.dev/compute/store"
	"better-compute.dev/compute/store/storetest"
)

// simPassword is the BMC password of every test's simulator: distinctive, so a leak is found.
const simPassword = "Sim-BMC-pa55word-7f3a"

// env is one test's world: a fresh schema, the embedded OpenFGA engine, a tenant with an
// editor, the metal API, a Redfish simulator and a reconcile runner on a manual clock.
type env struct {
	db     *store.DB
	az     *authz.Embedded
	ring   *seal.Keyring
	svc    server.Services
	sim    *redfishsim.Server
	clock  *reconciletest.Clock
	tenant string
	editor context.Context
	// principal is the editor's id.
	principal string
}

// envOptions change newEnv.
type envOptions struct {
	power       string           // the simulator's initial power state (default Off)
	logger      *slog.Logger     // every component logs here (default discard)
	runnerHook  *slog.Logger     // the BMC runner's logger, when a test hooks it
	reconcilerO metalrec.Options // MaxAttempts, Now
	ipmiTool    string           // the ipmitool the BMC runner calls (default: on PATH)
	// sim configures the Redfish simulator (Username, Password and PowerState are the env's).
	sim redfishsim.Config
	// settle bounds the wait for a power change (default: bmc's); power is then read every 10 ms.
	settle time.Duration
	// checkEvery is how often a run asks whether its node moved (default: bmc's).
	checkEvery time.Duration
}

func newEnv(t *testing.T, o envOptions) *env {
	t.Helper()
	ctx := testCtx(t)
	if o.logger == nil {
		o.logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	db := storetest.New(t)
	az, err := authz.NewEmbedded(ctx, authz.EmbeddedOptions{})
	if err != nil {
		t.Fatalf("authz: %v", err)
	}
	t.Cleanup(func() { _ = az.Close() })
	key, err := seal.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	ring, err := seal.NewKeyring(key)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{db: db, az: az, ring: ring, svc: server.NewServices(core.NewBase(db, az, ring, o.logger, netguard.Policy{Allow: netguard.AllowLoopback()}), nil, events.Options{}),
		clock: reconciletest.NewClock(time.Now().Add(time.Minute)), tenant: "tenant-" + ids.New("")}
	if _, err := store.InsertTenant(ctx, db.Q(), store.Tenant{ID: e.tenant, DisplayName: "metal"}); err != nil {
		t.Fatal(err)
	}
	e.principal = ids.New(ids.Principal)
	if _, err := store.InsertPrincipal(ctx, db.Q(), store.Principal{ID: e.principal, TenantID: e.tenant, Kind: "user", DisplayName: "ops"}); err != nil {
		t.Fatal(err)
	}
	if err := az.GrantTenantRole(ctx, e.tenant, e.principal, authz.RoleEditor); err != nil {
		t.Fatal(err)
	}
	e.editor = core.WithCaller(context.Background(), core.Caller{PrincipalID: e.principal, TenantID: e.tenant})
	cfg := o.sim
	cfg.Username, cfg.Password, cfg.PowerState = "operator", simPassword, o.power
	e.sim = redfishsim.New(cfg)
	t.Cleanup(e.sim.Close)
	return e
}

// runner builds a reconcile runner with only the metal handler, retrying after one second.
func (e *env) runner(t *testing.T, o envOptions) *reconcile.Runner {
	t.Helper()
	if o.logger == nil {
		o.logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	ro := o.reconcilerO
	ro.DB, ro.Keyring, ro.Logger = e.db, e.ring, o.logger
	ro.Runner = &bmc.Runner{Logger: o.logger, Outbound: netguard.Policy{Allow: netguard.AllowLoopback()}, IPMITool: o.ipmiTool,
		PowerSettle: o.settle, CheckInterval: o.checkEvery}
	if o.settle > 0 {
		ro.Runner.PowerPoll = 10 * time.Millisecond
	}
	if o.runnerHook != nil {
		ro.Runner.Logger = o.runnerHook
	}
	r, err := reconcile.New(reconcile.Options{
		DB: e.db, Holder: "metal-test", Handlers: map[string]reconcile.Handler{metalrec.Kind: metalrec.NewWithOptions(ro)},
		Clock: e.clock, Backoff: reconcile.Exponential{Initial: time.Second, Max: time.Second}, Logger: o.logger,
	})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// enrollRequest enrolls the simulator's machine, pinning its certificate (TLS is verified).
func (e *env) enrollRequest(name, password string) *v1.EnrollNodeRequest {
	return &v1.EnrollNodeRequest{TenantId: e.tenant, Name: name, Bmc: &v1.MetalBmcSettings{
		Address: e.sim.Host(), Port: int32(e.sim.Port()), Protocol: "redfish", Username: "operator",
		Password: password, CaCertPem: string(e.sim.CertPEM()),
	}}
}

func (e *env) enroll(t *testing.T, password string) *v1.MetalNode {
	t.Helper()
	n, err := e.svc.Metal.EnrollNode(e.editor, e.enrollRequest("sim-node", password))
	if err != nil {
		t.Fatalf("enroll: %v", err)
	}
	return n
}

func (e *env) get(t *testing.T, id string) *v1.MetalNode {
	t.Helper()
	n, err := e.svc.Metal.GetNode(e.editor, &v1.GetNodeRequest{TenantId: e.tenant, NodeId: id})
	if err != nil {
		t.Fatalf("get: %v", err)
	}
	return n
}

func (e *env) workItem(t *testing.T, id string) store.WorkItem {
	t.Helper()
	w, err := store.GetWorkItem(context.Background(), e.db, metalrec.Kind, id)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func testCtx(t *testing.T) context.Context {
	t.Helper()
	// A bound so a broken simulator cannot hang the suite; nothing asserts on time.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}
