// Package resources is core's part for networks, subnets, certificates and instances (the
// NetworkService, CertificateService and InstanceService). Deleting an instance takes it out of
// the load balancers that reach it in the same transaction (leave.go).
//
// Store surface (test/repository TestCorePartsStoreSurface): networks.go, certificates.go,
// instances.go, loadbalancers.go (leaving on an instance's delete), pools.go (a pool the tenant
// may use), tenancy.go (projects), workqueue.go.
package resources

import "better-compute.dev/compute/core"

// Service is the part's use cases, as the server's handlers call them.
type Service struct {
	base *core.Base
}

// New makes the part over the shared base.
func New(base *core.Base) *Service { return &Service{base: base} }
