package sim

import (
	"net/http"
	"slices"
	"time"

	"github.com/digitalocean/godo"
)

// lbRecord is a stored load balancer. lb holds its settings; status and addresses are derived
// from the timestamps when it is read.
type lbRecord struct {
	seq       int
	lb        godo.LoadBalancer
	ip, ipv6  string
	activeAt  time.Time // status turns from new to active
	ipAt      time.Time // ip and ipv6 become visible
	busyUntil time.Time // an update is still being applied
	resizedAt time.Time // the last change of size_unit (zero: never changed since create)
	errored   bool
}

// resizeInterval is how often DigitalOcean lets a load balancer's size_unit change; a PUT that
// changes it sooner is refused with resizeTooSoonMessage and changes nothing.
const resizeInterval = time.Hour

// resizeTooSoonMessage is the text of that refusal; the provider adapter matches it.
const resizeTooSoonMessage = "Load balancer can only be resized once per hour"

// busy reports whether the load balancer still processes an earlier action.
func (r *lbRecord) busy(now time.Time) bool {
	return !r.errored && (now.Before(r.activeAt) || now.Before(r.busyUntil))
}

// view is the load balancer as the API reports it at now.
func (a *account) lbView(r *lbRecord, now time.Time) godo.LoadBalancer {
	v := r.lb
	switch {
	case r.errored:
		v.Status = "errored"
	case now.Before(r.activeAt):
		v.Status = "new"
	default:
		v.Status = "active"
	}
	if !now.Before(r.ipAt) {
		v.IP, v.IPv6 = r.ip, r.ipv6
	}
	if v.Tag != "" {
		// A tag-based load balancer reports the droplets the tag selects right now.
		v.DropletIDs = nil
		for _, d := range sortedBySeq(a.droplets, func(d *dropletRecord) int { return d.seq }) {
			if slices.Contains(d.d.Tags, v.Tag) && d.d.Region.Slug == v.Region.Slug && d.d.VPCUUID == v.VPCUUID {
				v.DropletIDs = append(v.DropletIDs, d.d.ID)
			}
		}
	}
	return v
}

type lbRoot struct {
	LoadBalancer wireLB `json:"load_balancer"`
}

type lbsRoot struct {
	LoadBalancers []wireLB  `json:"load_balancers"`
	Links         wireLinks `json:"links"`
	Meta          wireMeta  `json:"meta"`
}

// lbAnswer is the load balancer as an answer carries it.
func (a *account) lbAnswer(r *lbRecord, now time.Time) lbRoot {
	return lbRoot{wireLBOf(a.lbView(r, now))}
}

type dropletIDsBody struct {
	DropletIDs []int `json:"droplet_ids"`
}

func (s *Server) routeLoadBalancers() {
	s.route("POST /v2/load_balancers", s.createLB)
	s.route("GET /v2/load_balancers", s.listLBs)
	s.route("GET /v2/load_balancers/{id}", s.getLB)
	s.route("PUT /v2/load_balancers/{id}", s.updateLB)
	s.route("DELETE /v2/load_balancers/{id}", s.deleteLB)
	s.route("POST /v2/load_balancers/{id}/droplets", s.addLBDroplets)
	s.route("DELETE /v2/load_balancers/{id}/droplets", s.removeLBDroplets)
}

// createLB answers 202 with the load balancer in status new. Names need not be unique, as at
// DigitalOcean: a second create with the same name makes a second load balancer.
func (s *Server) createLB(c *call) reply {
	var req godo.LoadBalancerRequest
	if err := c.decode(&req); err != nil {
		return fail(err)
	}
	lb, err := c.normalizeLB(&req, nil)
	if err != nil {
		return fail(err)
	}
	lb.ID = newUUID()
	lb.Created = stamp(c.now)
	for _, t := range req.Tags {
		if !tagName.MatchString(t) {
			return fail(errInvalid("tags: %q is not a valid tag name", t))
		}
	}
	lb.Tags = slices.Clone(req.Tags)
	rec := &lbRecord{lb: lb,
		activeAt: c.now.Add(s.opts.LoadBalancerActiveDelay),
		ipAt:     c.now.Add(s.opts.LoadBalancerIPDelay),
	}
	if req.ValidateOnly {
		return ok(http.StatusOK, c.acct.lbAnswer(rec, c.now))
	}
	rec.seq = c.acct.next()
	rec.ip, rec.ipv6 = s.allocAddrsLocked()
	c.acct.loadBalancers[lb.ID] = rec
	return ok(http.StatusAccepted, c.acct.lbAnswer(rec, c.now))
}

// listLBs pages through the account's load balancers in creation order, filtered by the
// names and uuids parameters godo's ListByNames and ListByUUIDs send.
func (s *Server) listLBs(c *call) reply {
	q := c.r.URL.Query()
	names, uuids := q["names"], q["uuids"]
	// Filter before sorting: a names lookup in a large account then sorts only the matches.
	matches := map[string]*lbRecord{}
	for id, r := range c.acct.loadBalancers {
		if (len(names) == 0 || slices.Contains(names, r.lb.Name)) && (len(uuids) == 0 || slices.Contains(uuids, r.lb.ID)) {
			matches[id] = r
		}
	}
	var all []wireLB
	for _, r := range sortedBySeq(matches, func(r *lbRecord) int { return r.seq }) {
		all = append(all, wireLBOf(c.acct.lbView(r, c.now)))
	}
	p, err := paginate(c.r, len(all))
	if err != nil {
		return fail(err)
	}
	page := all[p.lo:p.hi]
	if page == nil {
		page = []wireLB{}
	}
	links, meta := wirePage(p)
	return ok(http.StatusOK, lbsRoot{LoadBalancers: page, Links: links, Meta: meta})
}

func (s *Server) getLB(c *call) reply {
	r := c.acct.loadBalancers[c.r.PathValue("id")]
	if r == nil {
		return fail(errNotFound())
	}
	return ok(http.StatusOK, c.acct.lbAnswer(r, c.now))
}

// updateLB replaces the whole load balancer (absent fields reset to defaults). It is refused
// with 403 while an earlier action is still being processed.
func (s *Server) updateLB(c *call) reply {
	r := c.acct.loadBalancers[c.r.PathValue("id")]
	if r == nil {
		return fail(errNotFound())
	}
	if r.busy(c.now) {
		return fail(errForbidden(busyMessage))
	}
	var req godo.LoadBalancerRequest
	if err := c.decode(&req); err != nil {
		return fail(err)
	}
	lb, err := c.normalizeLB(&req, r)
	if err != nil {
		return fail(err)
	}
	// Tags are taken on create only: a PUT keeps those the load balancer has.
	lb.ID, lb.Created, lb.Tags = r.lb.ID, r.lb.Created, r.lb.Tags
	if lb.SizeUnit != r.lb.SizeUnit {
		if !r.resizedAt.IsZero() && c.now.Before(r.resizedAt.Add(resizeInterval)) {
			return fail(errInvalid(resizeTooSoonMessage))
		}
		r.resizedAt = c.now
	}
	r.lb = lb
	r.busyUntil = c.now.Add(s.opts.LoadBalancerUpdateDelay)
	return ok(http.StatusOK, c.acct.lbAnswer(r, c.now))
}

// deleteLB removes a load balancer at once. One that a global load balancer targets is
// refused with 409, so a dangling global target shows up as an error instead of silently.
func (s *Server) deleteLB(c *call) reply {
	id := c.r.PathValue("id")
	r := c.acct.loadBalancers[id]
	if r == nil {
		return fail(errNotFound())
	}
	for _, g := range c.acct.loadBalancers {
		if slices.Contains(g.lb.TargetLoadBalancerIDs, id) {
			return fail(errConflict("load balancer %s is a target of global load balancer %s", id, g.lb.ID))
		}
	}
	delete(c.acct.loadBalancers, id)
	return ok(http.StatusNoContent, nil)
}

// dropletChange loads the load balancer and the droplet ids of an add/remove request, with
// the checks both share.
func (s *Server) dropletChange(c *call) (*lbRecord, []int, *apiError) {
	r := c.acct.loadBalancers[c.r.PathValue("id")]
	if r == nil {
		return nil, nil, errNotFound()
	}
	var body dropletIDsBody
	if err := c.decode(&body); err != nil {
		return nil, nil, err
	}
	switch {
	case len(body.DropletIDs) == 0:
		return nil, nil, errInvalid("droplet_ids is required")
	case r.lb.Type == godo.LoadBalancerTypeGlobal:
		return nil, nil, errInvalid("GLOBAL load balancers have no droplets")
	case r.lb.Tag != "":
		return nil, nil, errInvalid("droplets cannot be changed on a load balancer that selects them by tag")
	case r.busy(c.now):
		return nil, nil, errForbidden(busyMessage)
	}
	return r, body.DropletIDs, nil
}

func (s *Server) addLBDroplets(c *call) reply {
	r, ids, err := s.dropletChange(c)
	if err != nil {
		return fail(err)
	}
	ids, err = c.checkDroplets(ids, r.lb.Region.Slug, r.lb.VPCUUID)
	if err != nil {
		return fail(err)
	}
	merged := slices.Clone(r.lb.DropletIDs)
	for _, id := range ids {
		if !slices.Contains(merged, id) {
			merged = append(merged, id)
		}
	}
	r.lb.DropletIDs = merged
	r.busyUntil = c.now.Add(s.opts.LoadBalancerUpdateDelay)
	return ok(http.StatusNoContent, nil)
}

func (s *Server) removeLBDroplets(c *call) reply {
	r, ids, err := s.dropletChange(c)
	if err != nil {
		return fail(err)
	}
	r.lb.DropletIDs = slices.DeleteFunc(slices.Clone(r.lb.DropletIDs), func(id int) bool { return slices.Contains(ids, id) })
	r.busyUntil = c.now.Add(s.opts.LoadBalancerUpdateDelay)
	return ok(http.StatusNoContent, nil)
}
