// Package tenancy is core's part for tenants, principals, tokens, role grants, projects and
// provider accounts (the TenantService, ProjectService and ProviderAccountService). Authentication
// itself is the base's (core.Base.Authenticate): every call needs it, this part only administers.
//
// Store surface (test/repository TestCorePartsStoreSurface): tenancy.go, pools.go (accounts).
package tenancy

import "better-compute.dev/compute/core"

// Service is the part's use cases, as the server's handlers call them.
type Service struct {
	base *core.Base
}

// New makes the part over the shared base.
func New(base *core.Base) *Service { return &Service{base: base} }
