package digitalocean

import (
	"context"
	"errors"
	"slices"

	"github.com/digitalocean/godo"

	"better-compute.dev/compute/provider"
)

// loadBalancers is provider.LoadBalancers on /v2/load_balancers.
type loadBalancers struct{ p *client }

func (l loadBalancers) Get(ctx context.Context, id string) (*provider.LoadBalancer, error) {
	const op = "get load balancer"
	if !validID(id) {
		return nil, l.p.invalid(op, "malformed id %q", id)
	}
	lb, _, err := l.p.godo.LoadBalancers.Get(ctx, id)
	if err != nil {
		return nil, l.p.fail(op+" "+id, err)
	}
	return fromLB(lb), nil
}

// FindByName asks for the name with the names filter and still pages through and compares
// exactly, so it stays correct against an API that ignored the filter. DigitalOcean allows
// duplicate names; the oldest match is returned.
func (l loadBalancers) FindByName(ctx context.Context, name string) (*provider.LoadBalancer, error) {
	const op = "find load balancer by name"
	if name == "" {
		return nil, l.p.invalid(op, "empty name")
	}
	lb, found, err := findPaged(ctx, l.p.pageSize,
		func(ctx context.Context, opt *godo.ListOptions) ([]godo.LoadBalancer, *godo.Response, error) {
			return l.p.godo.LoadBalancers.ListByNames(ctx, []string{name}, opt)
		},
		func(lb godo.LoadBalancer) bool { return lb.Name == name })
	if err != nil {
		return nil, l.p.fail(op, err)
	}
	if !found {
		return nil, l.p.wrap("digitalocean: "+op+": no load balancer named "+name+": "+provider.ErrNotFound.Error(), provider.ErrNotFound)
	}
	return fromLB(&lb), nil
}

// List pages through every load balancer at the provider's largest page size.
func (l loadBalancers) List(ctx context.Context) ([]*provider.LoadBalancer, error) {
	const op = "list load balancers"
	var out []*provider.LoadBalancer
	err := eachPage(ctx, l.p.pageSize, l.p.godo.LoadBalancers.List, func(lb godo.LoadBalancer) {
		out = append(out, fromLB(&lb))
	})
	if err != nil {
		return nil, l.p.fail(op, err)
	}
	return out, nil
}

// Create sends one POST and nothing more: on any failure the reconciler decides, and a create
// whose answer was lost is found again with FindByName.
func (l loadBalancers) Create(ctx context.Context, spec provider.LoadBalancerSpec) (*provider.LoadBalancer, error) {
	const op = "create load balancer"
	req, err := lbRequest(spec)
	if err != nil {
		return nil, l.p.invalid(op, "%v", err)
	}
	// DigitalOcean takes tags on create only.
	req.Tags = slices.Clone(spec.Tags)
	lb, _, err := l.p.godo.LoadBalancers.Create(ctx, req)
	if err != nil {
		return nil, l.p.fail(op+" "+spec.Name, err)
	}
	return fromLB(lb), nil
}

// Update replaces the load balancer with the whole desired state (PUT), tags apart (DigitalOcean
// keeps those of the create). While the provider still applies an earlier change the answer is
// provider.ErrBusy; a size change refused because the last one is too recent is
// provider.ErrTooSoon.
func (l loadBalancers) Update(ctx context.Context, id string, spec provider.LoadBalancerSpec) (*provider.LoadBalancer, error) {
	const op = "update load balancer"
	if !validID(id) {
		return nil, l.p.invalid(op, "malformed id %q", id)
	}
	req, err := lbRequest(spec)
	if err != nil {
		return nil, l.p.invalid(op, "%v", err)
	}
	lb, _, err := l.p.godo.LoadBalancers.Update(ctx, id, req)
	if err != nil {
		return nil, l.p.fail(op+" "+id, err)
	}
	return fromLB(lb), nil
}

// Delete is idempotent: a load balancer that is already gone is not an error.
func (l loadBalancers) Delete(ctx context.Context, id string) error {
	const op = "delete load balancer"
	if !validID(id) {
		return l.p.invalid(op, "malformed id %q", id)
	}
	_, err := l.p.godo.LoadBalancers.Delete(ctx, id)
	return ignoreNotFound(l.p.fail(op+" "+id, err))
}

func ignoreNotFound(err error) error {
	if errors.Is(err, provider.ErrNotFound) {
		return nil
	}
	return err
}
