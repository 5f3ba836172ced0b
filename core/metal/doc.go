// Package metal is core's part for the MetalService: enrolling bare-metal nodes (the BMC
// address checked against the outbound policy, its password sealed), reading them, and the
// verbs that move a node through its states (package metal's transitions), each queued to the
// metal reconciler.
//
// Store surface (test/repository TestCorePartsStoreSurface): metal.go, workqueue.go.
package metal

import "better-compute.dev/compute/core"

// Service is the part's use cases, as the server's handlers call them.
type Service struct {
	base *core.Base
	// Systems lists the systems behind a Redfish BMC at enrollment (nil: not checked there;
	// the reconciler refuses a run that does not name its system anyway).
	Systems SystemLister
}

// New makes the part over the shared base; systems may be nil.
func New(base *core.Base, systems SystemLister) *Service {
	return &Service{base: base, Systems: systems}
}
