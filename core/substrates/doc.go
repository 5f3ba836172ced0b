// Package substrates is core's part for the SubstrateService (a pool's substrate, read) and
// the SubstrateJoinService (a node joins with its join token). The substrate row itself is
// written by package pools, in the pool's transaction.
//
// Store surface (test/repository TestCorePartsStoreSurface): substrates.go, workqueue.go.
package substrates

import "better-compute.dev/compute/core"

// Service is the part's use cases, as the server's handlers call them.
type Service struct {
	base *core.Base
}

// New makes the part over the shared base.
func New(base *core.Base) *Service { return &Service{base: base} }
