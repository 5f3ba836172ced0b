package server

import (
	"better-compute.dev/compute/core"
	"better-compute.dev/compute/core/events"
	"better-compute.dev/compute/core/loadbalancers"
	"better-compute.dev/compute/core/metal"
	"better-compute.dev/compute/core/pools"
	"better-compute.dev/compute/core/resources"
	"better-compute.dev/compute/core/substrates"
	"better-compute.dev/compute/core/tenancy"
)

// Services are core's parts, one per API group, and the base they share (authentication). Each
// handler holds only the part it calls.
type Services struct {
	Base          *core.Base
	LoadBalancers *loadbalancers.Service
	Tenancy       *tenancy.Service
	Pools         *pools.Service
	Resources     *resources.Service
	Metal         *metal.Service
	Substrates    *substrates.Service
	Events        *events.Service
}

// NewServices makes every part over one base. systems may be nil (metal.New); watch tunes the
// event watches (zero: the defaults).
func NewServices(base *core.Base, systems metal.SystemLister, watch events.Options) Services {
	return Services{
		Base:          base,
		LoadBalancers: loadbalancers.New(base),
		Tenancy:       tenancy.New(base),
		Pools:         pools.New(base),
		Resources:     resources.New(base),
		Metal:         metal.New(base, systems),
		Substrates:    substrates.New(base),
		Events:        events.New(base, watch),
	}
}
