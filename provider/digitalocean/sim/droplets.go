package sim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/digitalocean/godo"
)

// dropletName is DigitalOcean's rule: valid hostname characters only.
var dropletName = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9.-]{0,253}[A-Za-z0-9])?$`)

// dropletRecord is a stored droplet; its status is derived from activeAt when read.
type dropletRecord struct {
	seq      int
	actionID int // the create action
	d        godo.Droplet
	activeAt time.Time
}

func (r *dropletRecord) view(now time.Time) godo.Droplet {
	v := r.d
	v.Status = "active"
	if now.Before(r.activeAt) {
		v.Status = "new"
	}
	return v
}

// dropletCreateBody is the create request. godo sends the image as a slug string or a numeric
// id, which its own request type cannot decode, hence this shape.
type dropletCreateBody struct {
	Name    string          `json:"name"`
	Names   []string        `json:"names"`
	Region  string          `json:"region"`
	Size    string          `json:"size"`
	Image   json.RawMessage `json:"image"`
	Tags    []string        `json:"tags"`
	VPCUUID string          `json:"vpc_uuid"`
}

type dropletRoot struct {
	Droplet wireDroplet `json:"droplet"`
	Links   *wireLinks  `json:"links,omitempty"`
}

type dropletsRoot struct {
	Droplets []wireDroplet `json:"droplets"`
	Links    wireLinks     `json:"links"`
	Meta     *wireMeta     `json:"meta,omitempty"`
}

func (s *Server) routeDroplets() {
	s.route("POST /v2/droplets", s.createDroplets)
	s.route("GET /v2/droplets", s.listDroplets)
	s.route("GET /v2/droplets/{id}", s.getDroplet)
	s.route("DELETE /v2/droplets/{id}", s.deleteDroplet)
	s.route("DELETE /v2/droplets", s.deleteDropletsByTag)
	s.route("GET /v2/actions/{id}", s.getAction)
}

// newDropletLocked validates and stores one droplet; active says it is running already (a
// test seeding machines the tenant has).
func (s *Server) newDropletLocked(a *account, b dropletCreateBody, now time.Time, active bool) (*dropletRecord, *apiError) {
	region := strings.ToLower(b.Region)
	switch {
	case !dropletName.MatchString(b.Name):
		return nil, errInvalid("name: only valid hostname characters are allowed (a-z, A-Z, 0-9, . and -)")
	case region == "":
		return nil, errInvalid("region is required")
	case regions[region] == "":
		return nil, errInvalid("region %q is not available", region)
	case b.Size == "":
		return nil, errInvalid("size is required")
	}
	image, err := imageOf(b.Image)
	if err != nil {
		return nil, err
	}
	if len(b.Tags) > 0 {
		for _, t := range b.Tags {
			if !tagName.MatchString(t) {
				return nil, errInvalid("tags: %q is not a valid tag name", t)
			}
		}
	}
	vpc := a.defaultVPC(region)
	if b.VPCUUID != "" {
		vpc = a.vpcs[b.VPCUUID]
		if vpc == nil {
			return nil, errInvalid("vpc_uuid %s does not exist", b.VPCUUID)
		}
		if vpc.vpc.RegionSlug != region {
			return nil, errInvalid("vpc %s is in region %s, not in %s", vpc.vpc.ID, vpc.vpc.RegionSlug, region)
		}
	}
	s.nextDropletID++
	id := s.nextDropletID
	public, public6 := s.allocAddrsLocked()
	rec := &dropletRecord{seq: a.next(), activeAt: now.Add(s.opts.DropletActiveDelay), d: godo.Droplet{
		ID: id, Name: b.Name, Memory: 1024, Vcpus: 1, Disk: 25,
		Region: regionObject(region), Image: image, SizeSlug: b.Size, Size: &godo.Size{Slug: b.Size, Memory: 1024, Vcpus: 1, Disk: 25},
		Tags: slices.Clone(b.Tags), VolumeIDs: []string{}, VPCUUID: vpc.vpc.ID, Created: stamp(now),
		Features: []string{"private_networking", "ipv6"},
		Networks: &godo.Networks{
			V4: []godo.NetworkV4{
				{IPAddress: public, Netmask: "255.254.0.0", Gateway: "198.18.0.1", Type: "public"},
				{IPAddress: privateAddr(vpc.vpc.IPRange, 1+len(a.droplets)%4000), Netmask: "255.255.240.0", Type: "private"},
			},
			V6: []godo.NetworkV6{{IPAddress: public6, Netmask: 64, Gateway: "2001:db8::1", Type: "public"}},
		},
	}}
	sp := sizeOf(b.Size)
	rec.d.Memory, rec.d.Vcpus, rec.d.Disk = sp.memory, sp.vcpus, sp.disk
	if active {
		rec.activeAt = now
	}
	a.droplets[id] = rec
	rec.actionID = a.addAction("create", id, region, now, rec.activeAt)
	return rec, nil
}

// imageOf reads the image a create request names: a slug or a numeric id.
func imageOf(raw json.RawMessage) (*godo.Image, *apiError) {
	var slug string
	if err := json.Unmarshal(raw, &slug); err == nil && slug != "" {
		return &godo.Image{Slug: slug, Name: slug, Type: "base", Public: true}, nil
	}
	var id int
	if err := json.Unmarshal(raw, &id); err == nil && id > 0 {
		return &godo.Image{ID: id, Name: fmt.Sprintf("image-%d", id), Type: "snapshot"}, nil
	}
	return nil, errInvalid("image is required: a slug or an id")
}

// createDroplets answers 202 with the new droplet (or droplets, for a names request).
func (s *Server) createDroplets(c *call) reply {
	var b dropletCreateBody
	if err := c.decode(&b); err != nil {
		return fail(err)
	}
	if len(b.Names) == 0 {
		rec, err := s.newDropletLocked(c.acct, b, c.now, false)
		if err != nil {
			return fail(err)
		}
		return ok(http.StatusAccepted, dropletRoot{Droplet: wireDropletOf(rec.view(c.now)),
			Links: createActionLinks(c, rec.actionID)})
	}
	var out []wireDroplet
	links := wireLinks{}
	for _, name := range b.Names {
		one := b
		one.Name, one.Names = name, nil
		rec, err := s.newDropletLocked(c.acct, one, c.now, false)
		if err != nil {
			return fail(err)
		}
		out = append(out, wireDropletOf(rec.view(c.now)))
		links.Actions = append(links.Actions, createActionLinks(c, rec.actionID).Actions...)
	}
	return ok(http.StatusAccepted, dropletsRoot{Droplets: out, Links: links})
}

// createActionLinks names the create action with an absolute href, as DigitalOcean does
// (godo users poll it with Actions.Get).
func createActionLinks(c *call, actionID int) *wireLinks {
	return &wireLinks{Actions: []godo.LinkAction{{ID: actionID, Rel: "create", HREF: actionHref(c.baseURL(), actionID)}}}
}

// listDroplets pages through the droplets, filtered by name (ListByName) or tag_name.
func (s *Server) listDroplets(c *call) reply {
	q := c.r.URL.Query()
	name, tag := q.Get("name"), q.Get("tag_name")
	var all []wireDroplet
	for _, r := range sortedBySeq(c.acct.droplets, func(r *dropletRecord) int { return r.seq }) {
		if (name != "" && r.d.Name != name) || (tag != "" && !slices.Contains(r.d.Tags, tag)) {
			continue
		}
		all = append(all, wireDropletOf(r.view(c.now)))
	}
	p, err := paginate(c.r, len(all))
	if err != nil {
		return fail(err)
	}
	page := all[p.lo:p.hi]
	if page == nil {
		page = []wireDroplet{}
	}
	links, meta := wirePage(p)
	return ok(http.StatusOK, dropletsRoot{Droplets: page, Links: links, Meta: &meta})
}

func (s *Server) getDroplet(c *call) reply {
	id, valid := c.intPathValue("id")
	r := c.acct.droplets[id]
	if !valid || r == nil {
		return fail(errNotFound())
	}
	return ok(http.StatusOK, dropletRoot{Droplet: wireDropletOf(r.view(c.now))})
}

func (s *Server) deleteDroplet(c *call) reply {
	id, valid := c.intPathValue("id")
	if !valid || c.acct.droplets[id] == nil {
		return fail(errNotFound())
	}
	c.acct.removeDroplet(id)
	return ok(http.StatusNoContent, nil)
}

func (s *Server) deleteDropletsByTag(c *call) reply {
	tag := c.r.URL.Query().Get("tag_name")
	if tag == "" {
		return fail(errInvalid("tag_name is required"))
	}
	for id, r := range c.acct.droplets {
		if slices.Contains(r.d.Tags, tag) {
			c.acct.removeDroplet(id)
		}
	}
	return ok(http.StatusNoContent, nil)
}

// removeDroplet deletes a droplet and takes it out of every load balancer, as DigitalOcean
// does when a droplet is destroyed.
func (a *account) removeDroplet(id int) {
	delete(a.droplets, id)
	for _, lb := range a.loadBalancers {
		if slices.Contains(lb.lb.DropletIDs, id) {
			lb.lb.DropletIDs = slices.DeleteFunc(slices.Clone(lb.lb.DropletIDs), func(x int) bool { return x == id })
		}
	}
}
