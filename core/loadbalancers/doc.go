// Package loadbalancers is a part of core (see package core for the base the parts share).
package loadbalancers

import "better-compute.dev/compute/core"

// Service is the part's use cases, as the server's handlers call them.
type Service struct {
	base *core.Base
}

// New makes the part over the shared base.
func New(base *core.Base) *Service { return &Service{base: base} }
