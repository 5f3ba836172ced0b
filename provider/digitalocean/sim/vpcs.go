package sim

import (
	"net/http"
	"net/netip"
	"regexp"
	"strings"
	"time"

	"github.com/digitalocean/godo"
)

var (
	vpcName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9.-]{0,63}$`)
	private = []netip.Prefix{
		netip.MustParsePrefix("10.0.0.0/8"),
		netip.MustParsePrefix("172.16.0.0/12"),
		netip.MustParsePrefix("192.168.0.0/16"),
	}
)

type vpcRoot struct {
	VPC wireVPC `json:"vpc"`
}

type vpcsRoot struct {
	VPCs  []wireVPC `json:"vpcs"`
	Links wireLinks `json:"links"`
	Meta  wireMeta  `json:"meta"`
}

func (s *Server) routeVPCs() {
	s.route("POST /v2/vpcs", s.createVPC)
	s.route("GET /v2/vpcs", s.listVPCs)
	s.route("GET /v2/vpcs/{id}", s.getVPC)
	s.route("DELETE /v2/vpcs/{id}", s.deleteVPC)
}

// newVPCLocked validates and stores a VPC. Names are unique within an account; the range, when
// given, must be private, between /16 and /28, and overlap no other VPC of the account.
func newVPCLocked(a *account, req godo.VPCCreateRequest, now time.Time) (*vpcRecord, *apiError) {
	region := strings.ToLower(req.RegionSlug)
	switch {
	case !vpcName.MatchString(req.Name):
		return nil, errInvalid("name must be 1-64 letters, digits, '.' or '-'")
	case a.vpcByName(req.Name) != nil:
		return nil, errInvalid("a VPC named %q already exists", req.Name)
	case region == "":
		return nil, errInvalid("region is required")
	case regions[region] == "":
		return nil, errInvalid("region %q is not available", region)
	}
	ipRange := req.IPRange
	if ipRange == "" {
		var found bool
		if ipRange, found = a.freeRange(); !found {
			return nil, errInvalid("no free ip_range is left for this account")
		}
	} else {
		p, err := netip.ParsePrefix(ipRange)
		switch {
		case err != nil || !p.Addr().Is4() || p != p.Masked():
			return nil, errInvalid("ip_range %q is not a valid IPv4 network in CIDR notation", ipRange)
		case p.Bits() < 16 || p.Bits() > 28:
			return nil, errInvalid("ip_range must be between /16 and /28")
		case !isPrivate(p):
			return nil, errInvalid("ip_range must be within 10.0.0.0/8, 172.16.0.0/12 or 192.168.0.0/16")
		}
		if other := a.overlapping(p); other != nil {
			return nil, errInvalid("ip_range %s overlaps the range of VPC %s", ipRange, other.vpc.Name)
		}
	}
	id := newUUID()
	rec := &vpcRecord{seq: a.next(), vpc: godo.VPC{ID: id, URN: "do:vpc:" + id, Name: req.Name,
		Description: req.Description, IPRange: ipRange, RegionSlug: region, CreatedAt: now.UTC()}}
	a.vpcs[id] = rec
	return rec, nil
}

func isPrivate(p netip.Prefix) bool {
	for _, q := range private {
		if q.Contains(p.Addr()) && p.Bits() >= q.Bits() {
			return true
		}
	}
	return false
}

func (s *Server) createVPC(c *call) reply {
	var req godo.VPCCreateRequest
	if err := c.decode(&req); err != nil {
		return fail(err)
	}
	rec, err := newVPCLocked(c.acct, req, c.now)
	if err != nil {
		return fail(err)
	}
	return ok(http.StatusCreated, vpcRoot{wireVPCOf(rec.vpc)})
}

func (s *Server) listVPCs(c *call) reply {
	all := sortedBySeq(c.acct.vpcs, func(r *vpcRecord) int { return r.seq })
	p, err := paginate(c.r, len(all))
	if err != nil {
		return fail(err)
	}
	page := make([]wireVPC, 0, p.hi-p.lo)
	for _, r := range all[p.lo:p.hi] {
		page = append(page, wireVPCOf(r.vpc))
	}
	links, meta := wirePage(p)
	return ok(http.StatusOK, vpcsRoot{VPCs: page, Links: links, Meta: meta})
}

func (s *Server) getVPC(c *call) reply {
	r := c.acct.vpcs[c.r.PathValue("id")]
	if r == nil {
		return fail(errNotFound())
	}
	return ok(http.StatusOK, vpcRoot{wireVPCOf(r.vpc)})
}

// deleteVPC refuses the default VPC (403) and a VPC that still has droplets or load balancers
// in it (409), with DigitalOcean's wording.
func (s *Server) deleteVPC(c *call) reply {
	id := c.r.PathValue("id")
	r := c.acct.vpcs[id]
	if r == nil {
		return fail(errNotFound())
	}
	if r.vpc.Default {
		return fail(errForbidden("Can not delete default VPC"))
	}
	for _, d := range c.acct.droplets {
		if d.d.VPCUUID == id {
			return fail(errConflict("Can not delete VPC with members"))
		}
	}
	for _, lb := range c.acct.loadBalancers {
		if lb.lb.VPCUUID == id {
			return fail(errConflict("Can not delete VPC with members"))
		}
	}
	delete(c.acct.vpcs, id)
	return ok(http.StatusNoContent, nil)
}
