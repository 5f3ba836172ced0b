package metal_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"better-compute.dev/compute/apierr"
	"better-compute.dev/compute/authz"
	"better-compute.dev/compute/core"
	"better-compute.dev/compute/core/events"
	v1 "better-compute.dev/compute/gen/go/bettercompute/compute/v1"
	"better-compute.dev/compute/ids"
	"better-compute.dev/compute/metal"
	"better-compute.dev/compute/netguard"
	"better-compute.dev/compute/seal"
	"better-compute.dev/compute/server"
	"better-compute.dev/compute/store"
	"better-compute.dev/compute/store/storetest"
)

// metalEnv is one test's world for the metal API: a fresh schema, the embedded OpenFGA engine,
// two tenants with an editor each, and a viewer of tenant A.
type metalEnv struct {
	db   *store.DB
	svc  server.Services
	ring *seal.Keyring
	// tenant ids and the contexts of their callers
	tenantA, tenantB string
	editorA, editorB context.Context
	viewerA          context.Context
}

func newMetalEnv(t *testing.T) *metalEnv {
	t.Helper()
	ctx := metalCtx(t)
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
	e := &metalEnv{db: db, ring: ring, svc: server.NewServices(core.NewBase(db, az, ring,
		slog.New(slog.NewTextHandler(io.Discard, nil)), netguard.Policy{}), nil, events.Options{})}
	principal := func(tenant string, role authz.Role) context.Context {
		id := ids.New(ids.Principal)
		if _, err := store.InsertPrincipal(ctx, db.Q(), store.Principal{ID: id, TenantID: tenant, Kind: "user", DisplayName: id}); err != nil {
			t.Fatal(err)
		}
		if err := az.GrantTenantRole(ctx, tenant, id, role); err != nil {
			t.Fatal(err)
		}
		return core.WithCaller(context.Background(), core.Caller{PrincipalID: id, TenantID: tenant})
	}
	for _, tn := range []*string{&e.tenantA, &e.tenantB} {
		*tn = "tenant-" + ids.New("")
		if _, err := store.InsertTenant(ctx, db.Q(), store.Tenant{ID: *tn, DisplayName: *tn}); err != nil {
			t.Fatal(err)
		}
	}
	e.editorA = principal(e.tenantA, authz.RoleEditor)
	e.editorB = principal(e.tenantB, authz.RoleEditor)
	e.viewerA = principal(e.tenantA, authz.RoleViewer)
	return e
}

// metalCtx bounds a test so a hung database cannot hang the suite; nothing asserts on time.
func metalCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

const metalPassword = "bmc-Pa55-core-test"

func metalEnrollRequest(tenant, name, address string) *v1.EnrollNodeRequest {
	return &v1.EnrollNodeRequest{TenantId: tenant, Name: name, Bmc: &v1.MetalBmcSettings{
		Address: address, Protocol: "redfish", Username: "admin", Password: metalPassword, InsecureTls: true,
	}}
}

// enroll makes a node in tenant A.
func (e *metalEnv) enroll(t *testing.T, name, address string) *v1.MetalNode {
	t.Helper()
	n, err := e.svc.Metal.EnrollNode(e.editorA, metalEnrollRequest(e.tenantA, name, address))
	if err != nil {
		t.Fatalf("enroll %s: %v", name, err)
	}
	return n
}

// force puts a node into a state directly, as a reconciler outcome would have: the API cannot
// reach success and failure states on its own.
func (e *metalEnv) force(t *testing.T, nodeID string, state metal.State) {
	t.Helper()
	if _, err := e.db.Pool().Exec(context.Background(),
		`UPDATE metal_nodes SET state = $2, version = version + 1 WHERE id = $1`, nodeID, string(state)); err != nil {
		t.Fatal(err)
	}
}

func (e *metalEnv) row(t *testing.T, nodeID string) store.MetalNode {
	t.Helper()
	n, err := store.GetMetalNode(context.Background(), e.db.Q(), nodeID)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// metalVerbCall calls the API method of a verb.
func metalVerbCall(svc server.Services, ctx context.Context, verb metal.Verb, tenant, node string) (*v1.MetalNode, error) {
	switch verb {
	case metal.Inspect:
		return svc.Metal.InspectNode(ctx, &v1.InspectNodeRequest{TenantId: tenant, NodeId: node})
	case metal.Commission:
		return svc.Metal.CommissionNode(ctx, &v1.CommissionNodeRequest{TenantId: tenant, NodeId: node})
	case metal.Deploy:
		return svc.Metal.DeployNode(ctx, &v1.DeployNodeRequest{TenantId: tenant, NodeId: node, Image: "ubuntu-24.04"})
	case metal.RescueVerb:
		return svc.Metal.RescueNode(ctx, &v1.RescueNodeRequest{TenantId: tenant, NodeId: node})
	case metal.Unrescue:
		return svc.Metal.UnrescueNode(ctx, &v1.UnrescueNodeRequest{TenantId: tenant, NodeId: node})
	case metal.Release:
		return svc.Metal.ReleaseNode(ctx, &v1.ReleaseNodeRequest{TenantId: tenant, NodeId: node})
	case metal.Retire:
		return svc.Metal.RetireNode(ctx, &v1.RetireNodeRequest{TenantId: tenant, NodeId: node})
	case metal.Abort:
		return svc.Metal.AbortNode(ctx, &v1.AbortNodeRequest{TenantId: tenant, NodeId: node})
	}
	return svc.Metal.MoveNode(ctx, tenant, node, verb, "")
}

// metalWantErr checks a platform error's code and, when given, its field or state reason.
func metalWantErr(t *testing.T, what string, err error, code apierr.Code, detail string) *apierr.Error {
	t.Helper()
	var pe *apierr.Error
	if !errors.As(err, &pe) {
		t.Fatalf("%s: want %s, got %v", what, code, err)
	}
	if pe.Code != code {
		t.Fatalf("%s: want %s, got %v", what, code, err)
	}
	if detail != "" && pe.Field != detail && pe.StateReason != detail {
		t.Fatalf("%s: want field or reason %q, got %+v", what, detail, pe)
	}
	return pe
}
