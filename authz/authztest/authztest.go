// Package authztest gives other packages' tests a real authorization engine:
// the embedded OpenFGA server on its memory datastore, fresh per call.
package authztest

import (
	"context"
	"testing"

	"better-compute.dev/compute/authz"
)

// New starts an embedded engine with an empty memory store and closes it when
// the test ends. It takes a few milliseconds, so one per test is fine.
func New(t testing.TB) *authz.Embedded {
	t.Helper()
	a, err := authz.NewEmbedded(context.Background(), authz.EmbeddedOptions{})
	if err != nil {
		t.Fatalf("authztest: start engine: %v", err)
	}
	t.Cleanup(func() { _ = a.Close() })
	return a
}

// Grant is one tenant role given by WithRoles.
type Grant struct {
	Tenant    string
	Principal string
	Role      authz.Role
}

// WithRoles starts an engine as New does and grants the given tenant roles.
func WithRoles(t testing.TB, grants ...Grant) *authz.Embedded {
	t.Helper()
	a := New(t)
	for _, g := range grants {
		if err := a.GrantTenantRole(context.Background(), g.Tenant, g.Principal, g.Role); err != nil {
			t.Fatalf("authztest: grant %s %s on %s: %v", g.Principal, g.Role, g.Tenant, err)
		}
	}
	return a
}
