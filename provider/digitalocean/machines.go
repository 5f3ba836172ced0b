package digitalocean

import (
	"context"
	"net/url"
	"strconv"

	"github.com/digitalocean/godo"

	"better-compute.dev/compute/provider"
)

// machines is provider.Machines on /v2/droplets. Machine ids are droplet ids in decimal.
type machines struct{ p *client }

func fromDroplet(d *godo.Droplet) *provider.Machine {
	out := &provider.Machine{ID: strconv.Itoa(d.ID), Name: d.Name, NetworkID: d.VPCUUID, Status: provider.MachineNew}
	if d.Region != nil {
		out.Region = d.Region.Slug
	}
	switch d.Status {
	case "active":
		out.Status = provider.MachineActive
	case "off", "archive":
		out.Status = provider.MachineOff
	}
	return out
}

func dropletID(id string) (int, bool) {
	n, err := strconv.Atoi(id)
	return n, err == nil && n > 0
}

func (m machines) Get(ctx context.Context, id string) (*provider.Machine, error) {
	const op = "get machine"
	n, valid := dropletID(id)
	if !valid {
		return nil, m.p.invalid(op, "machine id %q is not a droplet id", id)
	}
	d, _, err := m.p.godo.Droplets.Get(ctx, n)
	if err != nil {
		return nil, m.p.fail(op+" "+id, err)
	}
	return fromDroplet(d), nil
}

// FindByName uses the droplet name filter and compares exactly.
func (m machines) FindByName(ctx context.Context, name string) (*provider.Machine, error) {
	const op = "find machine by name"
	if name == "" {
		return nil, m.p.invalid(op, "empty name")
	}
	d, found, err := findPaged(ctx, m.p.pageSize,
		func(ctx context.Context, opt *godo.ListOptions) ([]godo.Droplet, *godo.Response, error) {
			// godo puts the name into the URL as it is; escaping keeps any name one parameter.
			return m.p.godo.Droplets.ListByName(ctx, url.QueryEscape(name), opt)
		},
		func(d godo.Droplet) bool { return d.Name == name })
	if err != nil {
		return nil, m.p.fail(op, err)
	}
	if !found {
		return nil, m.p.wrap("digitalocean: "+op+": no machine named "+name+": "+provider.ErrNotFound.Error(), provider.ErrNotFound)
	}
	return fromDroplet(&d), nil
}

func (m machines) Create(ctx context.Context, spec provider.MachineSpec) (*provider.Machine, error) {
	const op = "create machine"
	image := godo.DropletCreateImage{Slug: spec.Image}
	if n, numeric := dropletID(spec.Image); numeric {
		image = godo.DropletCreateImage{ID: n}
	}
	d, _, err := m.p.godo.Droplets.Create(ctx, &godo.DropletCreateRequest{
		Name: spec.Name, Region: spec.Region, Size: spec.Size, Image: image, VPCUUID: spec.NetworkID,
		// godo sends nil slices as null; DigitalOcean documents arrays.
		SSHKeys: []godo.DropletCreateSSHKey{}, Tags: []string{},
	})
	if err != nil {
		return nil, m.p.fail(op+" "+spec.Name, err)
	}
	return fromDroplet(d), nil
}

// Delete is idempotent.
func (m machines) Delete(ctx context.Context, id string) error {
	const op = "delete machine"
	n, valid := dropletID(id)
	if !valid {
		return m.p.invalid(op, "machine id %q is not a droplet id", id)
	}
	_, err := m.p.godo.Droplets.Delete(ctx, n)
	return ignoreNotFound(m.p.fail(op+" "+id, err))
}
