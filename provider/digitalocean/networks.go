package digitalocean

import (
	"context"

	"github.com/digitalocean/godo"

	"better-compute.dev/compute/provider"
)

// networks is provider.Networks on /v2/vpcs.
type networks struct{ p *client }

func fromVPC(v *godo.VPC) *provider.Network {
	return &provider.Network{ID: v.ID, Name: v.Name, Region: v.RegionSlug, IPRange: v.IPRange}
}

func (n networks) Get(ctx context.Context, id string) (*provider.Network, error) {
	const op = "get network"
	if !validID(id) {
		return nil, n.p.invalid(op, "malformed id %q", id)
	}
	v, _, err := n.p.godo.VPCs.Get(ctx, id)
	if err != nil {
		return nil, n.p.fail(op+" "+id, err)
	}
	return fromVPC(v), nil
}

// FindByName pages through the VPCs (the API has no name filter for them).
func (n networks) FindByName(ctx context.Context, name string) (*provider.Network, error) {
	const op = "find network by name"
	if name == "" {
		return nil, n.p.invalid(op, "empty name")
	}
	v, found, err := findPaged(ctx, n.p.pageSize, n.p.godo.VPCs.List, func(v *godo.VPC) bool { return v != nil && v.Name == name })
	if err != nil {
		return nil, n.p.fail(op, err)
	}
	if !found {
		return nil, n.p.wrap("digitalocean: "+op+": no network named "+name+": "+provider.ErrNotFound.Error(), provider.ErrNotFound)
	}
	return fromVPC(v), nil
}

func (n networks) Create(ctx context.Context, spec provider.NetworkSpec) (*provider.Network, error) {
	const op = "create network"
	v, _, err := n.p.godo.VPCs.Create(ctx, &godo.VPCCreateRequest{Name: spec.Name, RegionSlug: spec.Region, IPRange: spec.IPRange})
	if err != nil {
		return nil, n.p.fail(op+" "+spec.Name, err)
	}
	return fromVPC(v), nil
}

// Delete is idempotent. A VPC that still has members answers provider.ErrBusy.
func (n networks) Delete(ctx context.Context, id string) error {
	const op = "delete network"
	if !validID(id) {
		return n.p.invalid(op, "malformed id %q", id)
	}
	_, err := n.p.godo.VPCs.Delete(ctx, id)
	return ignoreNotFound(n.p.fail(op+" "+id, err))
}
