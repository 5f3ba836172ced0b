// Package loadbalancers is core's part for the LoadBalancerService: create (with its idempotency
// key and quota booking), get, list, update (the mask's parts are read from the request's
// descriptor) and delete, the resolution of a load balancer's targets, subnet and certificates,
// and the conversion between rows and the public message.
//
// Store surface (test/repository TestCorePartsStoreSurface): loadbalancers.go, and what a load
// balancer refers to or books: instances.go, networks.go (subnets), certificates.go, pools.go,
// tenancy.go (projects), quota_booking.go, idempotency.go, workqueue.go; the engine through
// core.Store (two-trip transactions, AwaitIdempotencyTwin).
package loadbalancers

import "better-compute.dev/compute/core"

// Service is the part's use cases, as the server's handlers call them.
type Service struct {
	base *core.Base
}

// New makes the part over the shared base.
func New(base *core.Base) *Service { return &Service{base: base} }
