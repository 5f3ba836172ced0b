// Package pools is core's part for the PoolService: pools, their policy and archive, the quotas
// tenants hold on them, and the substrate that follows a pool's policy in the pool's own
// transaction (recorded with a join token, queued to the kubernetes.substrates reconciler).
//
// Store surface (test/repository TestCorePartsStoreSurface): pools.go (pools, accounts, quotas),
// substrates.go, tenancy.go (a quota's tenant), workqueue.go.
package pools

import "better-compute.dev/compute/core"

// Service is the part's use cases, as the server's handlers call them.
type Service struct {
	base *core.Base
}

// New makes the part over the shared base.
func New(base *core.Base) *Service { return &Service{base: base} }
