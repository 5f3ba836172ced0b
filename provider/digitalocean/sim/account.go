package sim

import (
	"fmt"
	"net/netip"
	"slices"
	"time"

	"github.com/digitalocean/godo"
)

// regions are the region slugs the simulator knows, with their display names.
var regions = map[string]string{
	"nyc1": "New York 1", "nyc2": "New York 2", "nyc3": "New York 3",
	"sfo2": "San Francisco 2", "sfo3": "San Francisco 3",
	"ams3": "Amsterdam 3", "sgp1": "Singapore 1", "lon1": "London 1",
	"fra1": "Frankfurt 1", "tor1": "Toronto 1", "blr1": "Bangalore 1",
	"syd1": "Sydney 1", "atl1": "Atlanta 1",
}

// regionSlugs lists the regions in a fixed order, so default networks are numbered the same
// way in every run.
func regionSlugs() []string {
	out := make([]string, 0, len(regions))
	for slug := range regions {
		out = append(out, slug)
	}
	slices.Sort(out)
	return out
}

func regionObject(slug string) *godo.Region {
	return &godo.Region{Slug: slug, Name: regions[slug], Available: true,
		Features: []string{"private_networking", "backups", "ipv6", "metadata"}}
}

// account is everything one token owns. Maps are keyed by id; seq numbers keep the creation
// order lists are answered in.
type account struct {
	seq           int
	loadBalancers map[string]*lbRecord
	droplets      map[int]*dropletRecord
	vpcs          map[string]*vpcRecord
	certificates  map[string]*certRecord
	actions       map[int]*actionRecord
	nextActionID  int
	requests      map[string]int
}

type vpcRecord struct {
	seq int
	vpc godo.VPC
}

// newAccount makes an account with a default VPC in every region, as DigitalOcean accounts
// have one per region once anything was placed there.
func newAccount(now time.Time) *account {
	a := &account{
		loadBalancers: map[string]*lbRecord{},
		droplets:      map[int]*dropletRecord{},
		vpcs:          map[string]*vpcRecord{},
		certificates:  map[string]*certRecord{},
		requests:      map[string]int{},
	}
	for i, slug := range regionSlugs() {
		id := newUUID()
		a.vpcs[id] = &vpcRecord{seq: a.next(), vpc: godo.VPC{
			ID: id, URN: "do:vpc:" + id, Name: "default-" + slug,
			IPRange: fmt.Sprintf("10.%d.0.0/20", 100+i), RegionSlug: slug,
			CreatedAt: now.UTC(), Default: true,
		}}
	}
	return a
}

// next hands out the account's next creation sequence number.
func (a *account) next() int {
	a.seq++
	return a.seq
}

// defaultVPC returns the region's default VPC.
func (a *account) defaultVPC(region string) *vpcRecord {
	for _, v := range a.vpcs {
		if v.vpc.Default && v.vpc.RegionSlug == region {
			return v
		}
	}
	return nil
}

// vpcByName finds a VPC by exact name.
func (a *account) vpcByName(name string) *vpcRecord {
	for _, v := range a.vpcs {
		if v.vpc.Name == name {
			return v
		}
	}
	return nil
}

// freeRange picks the first /20 in 10.0.0.0/8 that overlaps none of the account's VPCs.
func (a *account) freeRange() (string, bool) {
	for second := 0; second < 256; second++ {
		for third := 0; third < 256; third += 16 {
			p := netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(second), byte(third), 0}), 20)
			if a.overlapping(p) == nil {
				return p.String(), true
			}
		}
	}
	return "", false
}

// overlapping returns a VPC whose range overlaps p, or nil.
func (a *account) overlapping(p netip.Prefix) *vpcRecord {
	for _, v := range a.vpcs {
		q, err := netip.ParsePrefix(v.vpc.IPRange)
		if err == nil && q.Overlaps(p) {
			return v
		}
	}
	return nil
}

// sortedBySeq returns the values of m in creation order.
func sortedBySeq[K comparable, V any](m map[K]V, seq func(V) int) []V {
	out := make([]V, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	slices.SortFunc(out, func(x, y V) int { return seq(x) - seq(y) })
	return out
}
