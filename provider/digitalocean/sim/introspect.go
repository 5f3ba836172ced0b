package sim

import (
	"encoding/json"
	"errors"
	"maps"
	"slices"

	"github.com/digitalocean/godo"
)

// ErrUnknownToken is returned by the test helpers for a token that is no account.
var ErrUnknownToken = errors.New("sim: unknown token")

// Snapshot is everything one account holds, as the API would report it now.
type Snapshot struct {
	LoadBalancers []godo.LoadBalancer `json:"load_balancers"`
	Droplets      []godo.Droplet      `json:"droplets"`
	VPCs          []godo.VPC          `json:"vpcs"`
	Certificates  []godo.Certificate  `json:"certificates"`
}

// AddToken makes token an account (no-op if it is one already).
func (s *Server) AddToken(token string) {
	if token == "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.accounts[token] == nil {
		s.accounts[token] = newAccount(s.opts.Now())
	}
}

// withAccount runs fn on the token's account under the lock.
func (s *Server) withAccount(token string, fn func(a *account) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.accounts[token]
	if a == nil {
		return ErrUnknownToken
	}
	return fn(a)
}

// Snapshot returns a deep copy of the account's resources in creation order.
func (s *Server) Snapshot(token string) (Snapshot, error) {
	var raw []byte
	err := s.withAccount(token, func(a *account) error {
		now := s.opts.Now()
		var snap Snapshot
		for _, r := range sortedBySeq(a.loadBalancers, func(r *lbRecord) int { return r.seq }) {
			snap.LoadBalancers = append(snap.LoadBalancers, a.lbView(r, now))
		}
		for _, r := range sortedBySeq(a.droplets, func(r *dropletRecord) int { return r.seq }) {
			snap.Droplets = append(snap.Droplets, r.view(now))
		}
		for _, r := range sortedBySeq(a.vpcs, func(r *vpcRecord) int { return r.seq }) {
			snap.VPCs = append(snap.VPCs, r.vpc)
		}
		for _, r := range sortedBySeq(a.certificates, func(r *certRecord) int { return r.seq }) {
			snap.Certificates = append(snap.Certificates, s.certView(r, now))
		}
		var err error
		raw, err = json.Marshal(snap)
		return err
	})
	if err != nil {
		return Snapshot{}, err
	}
	// A JSON round trip is the simplest deep copy of godo's nested types; the caller may
	// keep or change the result without touching the simulator's state.
	var out Snapshot
	err = json.Unmarshal(raw, &out)
	return out, err
}

// deepCopy detaches a value from the simulator's state (godo's types are plain JSON data).
func deepCopy[T any](v T) T {
	raw, err := json.Marshal(v)
	if err != nil {
		return v
	}
	var out T
	if json.Unmarshal(raw, &out) != nil {
		return v
	}
	return out
}

// LoadBalancerNameCounts counts the account's load balancers by name. DigitalOcean allows
// duplicate names, so a count above one is how a control plane's double create shows.
func (s *Server) LoadBalancerNameCounts(token string) map[string]int {
	out := map[string]int{}
	_ = s.withAccount(token, func(a *account) error {
		for _, r := range a.loadBalancers {
			out[r.lb.Name]++
		}
		return nil
	})
	return out
}

// CountLoadBalancersNamed reports how many of the account's load balancers carry name.
func (s *Server) CountLoadBalancersNamed(token, name string) int {
	return s.LoadBalancerNameCounts(token)[name]
}

// Requests returns how many API requests were received, by route pattern such as
// "GET /v2/load_balancers/{id}" (requests that matched no route count as "METHOD (unmatched)").
func (s *Server) Requests() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.requests)
}

// RequestsFor is Requests for one account.
func (s *Server) RequestsFor(token string) map[string]int {
	out := map[string]int{}
	_ = s.withAccount(token, func(a *account) error {
		out = maps.Clone(a.requests)
		return nil
	})
	return out
}

// ResetRequests zeroes every request counter.
func (s *Server) ResetRequests() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.requests)
	for _, a := range s.accounts {
		clear(a.requests)
	}
}

// DropletSeed describes a droplet a test places directly, as if the tenant's machine already
// existed. Empty Size and Image take a small Ubuntu droplet; empty VPCUUID the default VPC.
type DropletSeed struct {
	Name    string   `json:"name"`
	Region  string   `json:"region"`
	VPCUUID string   `json:"vpc_uuid"`
	Size    string   `json:"size"`
	Image   string   `json:"image"`
	Tags    []string `json:"tags"`
}

// CreateDroplet places an active droplet in the account without an API request (it uses no
// rate budget and no fault applies), with the same checks as the API.
func (s *Server) CreateDroplet(token string, seed DropletSeed) (godo.Droplet, error) {
	var out godo.Droplet
	err := s.withAccount(token, func(a *account) error {
		image, _ := json.Marshal(orDefault(seed.Image, "ubuntu-24-04-x64"))
		rec, apiErr := s.newDropletLocked(a, dropletCreateBody{Name: seed.Name, Region: seed.Region,
			Size: orDefault(seed.Size, "s-1vcpu-1gb"), Image: image, Tags: slices.Clone(seed.Tags), VPCUUID: seed.VPCUUID},
			s.opts.Now(), true)
		if apiErr != nil {
			return apiErr
		}
		out = deepCopy(rec.view(s.opts.Now()))
		return nil
	})
	return out, err
}

// CreateVPC places a VPC in the account without an API request.
func (s *Server) CreateVPC(token, name, region, ipRange string) (godo.VPC, error) {
	var out godo.VPC
	err := s.withAccount(token, func(a *account) error {
		rec, apiErr := newVPCLocked(a, godo.VPCCreateRequest{Name: name, RegionSlug: region, IPRange: ipRange}, s.opts.Now())
		if apiErr != nil {
			return apiErr
		}
		out = deepCopy(rec.vpc)
		return nil
	})
	return out, err
}

// DefaultVPC returns the id of the account's default VPC in region.
func (s *Server) DefaultVPC(token, region string) (string, error) {
	var id string
	err := s.withAccount(token, func(a *account) error {
		v := a.defaultVPC(region)
		if v == nil {
			return errInvalid("region %q is not available", region)
		}
		id = v.vpc.ID
		return nil
	})
	return id, err
}

// FailLoadBalancer puts a load balancer in status errored, as a failed provisioning would.
func (s *Server) FailLoadBalancer(token, id string) error {
	return s.withAccount(token, func(a *account) error {
		r := a.loadBalancers[id]
		if r == nil {
			return errNotFound()
		}
		r.errored = true
		return nil
	})
}

// RenewCertificate renews a lets_encrypt certificate the way DigitalOcean does: the renewed
// certificate gets a new id, and load balancers that used the old one now name the new one.
func (s *Server) RenewCertificate(token, id string) (string, error) {
	var newID string
	err := s.withAccount(token, func(a *account) error {
		old := a.certificates[id]
		if old == nil {
			return errNotFound()
		}
		if !old.managed {
			return errInvalid("only lets_encrypt certificates are renewed")
		}
		renewed := *old
		renewed.c.ID = newUUID()
		renewed.seq = a.next()
		delete(a.certificates, id)
		a.certificates[renewed.c.ID] = &renewed
		for _, r := range a.loadBalancers {
			rules := slices.Clone(r.lb.ForwardingRules)
			for i := range rules {
				if rules[i].CertificateID == id {
					rules[i].CertificateID = renewed.c.ID
				}
			}
			r.lb.ForwardingRules = rules
			for i, d := range r.lb.Domains {
				if d.CertificateID == id {
					dc := *d
					dc.CertificateID = renewed.c.ID
					r.lb.Domains = slices.Clone(r.lb.Domains)
					r.lb.Domains[i] = &dc
				}
			}
		}
		newID = renewed.c.ID
		return nil
	})
	return newID, err
}

// maxBodiesKept bounds the request bodies kept per route.
const maxBodiesKept = 64

// recordBodyLocked keeps a request body by route pattern, dropping the oldest past the bound.
func (s *Server) recordBodyLocked(pattern string, body []byte) {
	kept := append(s.bodies[pattern], append([]byte(nil), body...))
	if len(kept) > maxBodiesKept {
		kept = kept[len(kept)-maxBodiesKept:]
	}
	s.bodies[pattern] = kept
}

// RequestBodies returns the most recent request bodies received on a route pattern such as
// "POST /v2/load_balancers" (at most 64, oldest first), so tests can check what a client sent
// against DigitalOcean's documented request shapes.
func (s *Server) RequestBodies(pattern string) [][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([][]byte, 0, len(s.bodies[pattern]))
	for _, b := range s.bodies[pattern] {
		out = append(out, append([]byte(nil), b...))
	}
	return out
}
