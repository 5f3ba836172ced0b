package sim

import (
	"slices"
	"strconv"

	"github.com/digitalocean/godo"
)

// The simulator's answers are encoded from the types in this file, not from godo's: godo's
// client structs mark nearly every field omitempty, so encoding them drops the zero values
// (false, 0, empty arrays, null) that a real answer always carries. These types follow the
// objects as DigitalOcean documents them: every documented field is present, arrays are
// arrays even when empty, and absent values are null.

// wireRegion is a region object (embedded in droplets and load balancers).
type wireRegion struct {
	Slug      string   `json:"slug"`
	Name      string   `json:"name"`
	Sizes     []string `json:"sizes"`
	Available bool     `json:"available"`
	Features  []string `json:"features"`
}

// sizeSpec is one droplet size the simulator offers.
type sizeSpec struct {
	memory, vcpus, disk int
	transfer            float64
	monthly             float64
	description         string
}

// sizes are the droplet sizes every simulated region offers; an unknown slug a create names is
// answered like the smallest one, so the simulator accepts what a test chooses.
var sizes = map[string]sizeSpec{
	"s-1vcpu-512mb-10gb": {512, 1, 10, 0.5, 4, "Basic"},
	"s-1vcpu-1gb":        {1024, 1, 25, 1, 6, "Basic"},
	"s-1vcpu-2gb":        {2048, 1, 50, 2, 12, "Basic"},
	"s-2vcpu-2gb":        {2048, 2, 60, 3, 18, "Basic"},
	"s-2vcpu-4gb":        {4096, 2, 80, 4, 24, "Basic"},
	"s-4vcpu-8gb":        {8192, 4, 160, 5, 48, "Basic"},
}

func sizeSlugs() []string {
	out := make([]string, 0, len(sizes))
	for slug := range sizes {
		out = append(out, slug)
	}
	slices.Sort(out)
	return out
}

func wireRegionOf(slug string) *wireRegion {
	if slug == "" {
		return nil
	}
	return &wireRegion{Slug: slug, Name: regions[slug], Sizes: sizeSlugs(), Available: true,
		Features: []string{"backups", "ipv6", "metadata", "install_agent", "storage", "image_transfer"}}
}

// wireSize is a size object (droplet.size).
type wireSize struct {
	Slug         string   `json:"slug"`
	Memory       int      `json:"memory"`
	Vcpus        int      `json:"vcpus"`
	Disk         int      `json:"disk"`
	Transfer     float64  `json:"transfer"`
	PriceMonthly float64  `json:"price_monthly"`
	PriceHourly  float64  `json:"price_hourly"`
	Regions      []string `json:"regions"`
	Available    bool     `json:"available"`
	Description  string   `json:"description"`
}

func sizeOf(slug string) sizeSpec {
	if sp, known := sizes[slug]; known {
		return sp
	}
	return sizes["s-1vcpu-1gb"]
}

func wireSizeOf(slug string) *wireSize {
	sp := sizeOf(slug)
	return &wireSize{Slug: slug, Memory: sp.memory, Vcpus: sp.vcpus, Disk: sp.disk, Transfer: sp.transfer,
		PriceMonthly: sp.monthly, PriceHourly: float64(int(sp.monthly/730*1e5)) / 1e5,
		Regions: regionSlugs(), Available: true, Description: sp.description}
}

// wireImage is an image object (droplet.image). slug is null for a snapshot.
type wireImage struct {
	ID            int      `json:"id"`
	Name          string   `json:"name"`
	Type          string   `json:"type"`
	Distribution  string   `json:"distribution"`
	Slug          *string  `json:"slug"`
	Public        bool     `json:"public"`
	Regions       []string `json:"regions"`
	CreatedAt     string   `json:"created_at"`
	MinDiskSize   int      `json:"min_disk_size"`
	SizeGigabytes float64  `json:"size_gigabytes"`
	Description   string   `json:"description"`
	Tags          []string `json:"tags"`
	Status        string   `json:"status"`
	ErrorMessage  string   `json:"error_message"`
}

func wireImageOf(img *godo.Image, created string) *wireImage {
	if img == nil {
		return nil
	}
	out := &wireImage{ID: img.ID, Name: img.Name, Type: img.Type, Distribution: "Ubuntu", Public: img.Public,
		Regions: regionSlugs(), CreatedAt: created, MinDiskSize: 10, SizeGigabytes: 2.5,
		Description: img.Name, Tags: []string{}, Status: "available"}
	if img.Slug != "" {
		slug := img.Slug
		out.Slug = &slug
	}
	return out
}

type wireNetworkV4 struct {
	IPAddress string `json:"ip_address"`
	Netmask   string `json:"netmask"`
	Gateway   string `json:"gateway"`
	Type      string `json:"type"`
}

type wireNetworkV6 struct {
	IPAddress string `json:"ip_address"`
	Netmask   int    `json:"netmask"`
	Gateway   string `json:"gateway"`
	Type      string `json:"type"`
}

type wireNetworks struct {
	V4 []wireNetworkV4 `json:"v4"`
	V6 []wireNetworkV6 `json:"v6"`
}

// wireDroplet is a droplet object.
type wireDroplet struct {
	ID               int           `json:"id"`
	Name             string        `json:"name"`
	Memory           int           `json:"memory"`
	Vcpus            int           `json:"vcpus"`
	Disk             int           `json:"disk"`
	Locked           bool          `json:"locked"`
	Status           string        `json:"status"`
	Kernel           *struct{}     `json:"kernel"`
	CreatedAt        string        `json:"created_at"`
	Features         []string      `json:"features"`
	BackupIDs        []int         `json:"backup_ids"`
	NextBackupWindow *struct{}     `json:"next_backup_window"`
	SnapshotIDs      []int         `json:"snapshot_ids"`
	Image            *wireImage    `json:"image"`
	VolumeIDs        []string      `json:"volume_ids"`
	Size             *wireSize     `json:"size"`
	SizeSlug         string        `json:"size_slug"`
	Networks         *wireNetworks `json:"networks"`
	Region           *wireRegion   `json:"region"`
	Tags             []string      `json:"tags"`
	VPCUUID          string        `json:"vpc_uuid"`
}

func wireDropletOf(d godo.Droplet) wireDroplet {
	out := wireDroplet{ID: d.ID, Name: d.Name, Memory: d.Memory, Vcpus: d.Vcpus, Disk: d.Disk,
		Locked: d.Locked, Status: d.Status, CreatedAt: d.Created,
		Features: orEmpty(d.Features), BackupIDs: orEmpty(d.BackupIDs), SnapshotIDs: orEmpty(d.SnapshotIDs),
		Image: wireImageOf(d.Image, d.Created), VolumeIDs: orEmpty(d.VolumeIDs), Size: wireSizeOf(d.SizeSlug),
		SizeSlug: d.SizeSlug, Networks: &wireNetworks{V4: []wireNetworkV4{}, V6: []wireNetworkV6{}},
		Tags: orEmpty(d.Tags), VPCUUID: d.VPCUUID}
	if d.Region != nil {
		out.Region = wireRegionOf(d.Region.Slug)
	}
	if d.Networks != nil {
		for _, n := range d.Networks.V4 {
			out.Networks.V4 = append(out.Networks.V4, wireNetworkV4(n))
		}
		for _, n := range d.Networks.V6 {
			out.Networks.V6 = append(out.Networks.V6, wireNetworkV6(n))
		}
	}
	return out
}

type wireForwardingRule struct {
	EntryProtocol  string `json:"entry_protocol"`
	EntryPort      int    `json:"entry_port"`
	TargetProtocol string `json:"target_protocol"`
	TargetPort     int    `json:"target_port"`
	CertificateID  string `json:"certificate_id"`
	TLSPassthrough bool   `json:"tls_passthrough"`
}

type wireHealthCheck struct {
	Protocol               string `json:"protocol"`
	Port                   int    `json:"port"`
	Path                   string `json:"path"`
	CheckIntervalSeconds   int    `json:"check_interval_seconds"`
	ResponseTimeoutSeconds int    `json:"response_timeout_seconds"`
	HealthyThreshold       int    `json:"healthy_threshold"`
	UnhealthyThreshold     int    `json:"unhealthy_threshold"`
}

type wireStickySessions struct {
	Type             string `json:"type"`
	CookieName       string `json:"cookie_name,omitempty"`
	CookieTTLSeconds int    `json:"cookie_ttl_seconds,omitempty"`
}

type wireFirewall struct {
	Allow []string `json:"allow"`
	Deny  []string `json:"deny"`
}

type wireCDN struct {
	IsEnabled bool `json:"is_enabled"`
}

type wireGLBSettings struct {
	TargetProtocol    string            `json:"target_protocol"`
	TargetPort        uint32            `json:"target_port"`
	CDN               wireCDN           `json:"cdn"`
	RegionPriorities  map[string]uint32 `json:"region_priorities,omitempty"`
	FailoverThreshold uint32            `json:"failover_threshold,omitempty"`
}

type wireLBDomain struct {
	Name          string `json:"name"`
	IsManaged     bool   `json:"is_managed"`
	CertificateID string `json:"certificate_id"`
	Status        string `json:"status"`
}

// wireLB is a load_balancer object. A GLOBAL one has no region (null) and carries
// glb_settings, target_load_balancer_ids and domains; a regional one carries them empty.
type wireLB struct {
	ID                           string               `json:"id"`
	Name                         string               `json:"name"`
	ProjectID                    string               `json:"project_id"`
	IP                           string               `json:"ip"`
	IPv6                         string               `json:"ipv6"`
	SizeUnit                     uint32               `json:"size_unit"`
	Size                         string               `json:"size,omitempty"` // deprecated for size_unit
	Type                         string               `json:"type"`
	Algorithm                    string               `json:"algorithm"`
	Status                       string               `json:"status"`
	CreatedAt                    string               `json:"created_at"`
	ForwardingRules              []wireForwardingRule `json:"forwarding_rules"`
	HealthCheck                  *wireHealthCheck     `json:"health_check"`
	StickySessions               *wireStickySessions  `json:"sticky_sessions"`
	Region                       *wireRegion          `json:"region"`
	Tag                          string               `json:"tag"`
	DropletIDs                   []int                `json:"droplet_ids"`
	RedirectHTTPToHTTPS          bool                 `json:"redirect_http_to_https"`
	EnableProxyProtocol          bool                 `json:"enable_proxy_protocol"`
	EnableBackendKeepalive       bool                 `json:"enable_backend_keepalive"`
	HTTPIdleTimeoutSeconds       uint64               `json:"http_idle_timeout_seconds"`
	VPCUUID                      string               `json:"vpc_uuid,omitempty"` // none for GLOBAL
	DisableLetsEncryptDNSRecords bool                 `json:"disable_lets_encrypt_dns_records"`
	Firewall                     *wireFirewall        `json:"firewall"`
	Network                      string               `json:"network"`
	NetworkStack                 string               `json:"network_stack"`
	TLSCipherPolicy              string               `json:"tls_cipher_policy"`
	GLBSettings                  *wireGLBSettings     `json:"glb_settings,omitempty"`
	TargetLoadBalancerIDs        []string             `json:"target_load_balancer_ids"`
	Domains                      []wireLBDomain       `json:"domains"`
	Tags                         []string             `json:"tags"`
}

func wireLBOf(lb godo.LoadBalancer) wireLB {
	out := wireLB{ID: lb.ID, Name: lb.Name, ProjectID: lb.ProjectID, IP: lb.IP, IPv6: lb.IPv6,
		SizeUnit: lb.SizeUnit, Size: lb.SizeSlug, Type: lb.Type, Algorithm: lb.Algorithm, Status: lb.Status,
		CreatedAt: lb.Created, ForwardingRules: []wireForwardingRule{}, Tag: lb.Tag,
		DropletIDs: orEmpty(lb.DropletIDs), RedirectHTTPToHTTPS: lb.RedirectHttpToHttps,
		EnableProxyProtocol: lb.EnableProxyProtocol, EnableBackendKeepalive: lb.EnableBackendKeepalive,
		HTTPIdleTimeoutSeconds: 60, VPCUUID: lb.VPCUUID, Network: lb.Network, NetworkStack: lb.NetworkStack,
		TLSCipherPolicy: lb.TLSCipherPolicy, TargetLoadBalancerIDs: orEmpty(lb.TargetLoadBalancerIDs),
		Domains: []wireLBDomain{}, Tags: orEmpty(lb.Tags), Firewall: &wireFirewall{Allow: []string{}, Deny: []string{}}}
	if lb.Algorithm == "" {
		out.Algorithm = "round_robin"
	}
	if lb.HTTPIdleTimeoutSeconds != nil {
		out.HTTPIdleTimeoutSeconds = *lb.HTTPIdleTimeoutSeconds
	}
	if lb.DisableLetsEncryptDNSRecords != nil {
		out.DisableLetsEncryptDNSRecords = *lb.DisableLetsEncryptDNSRecords
	}
	if lb.Region != nil {
		out.Region = wireRegionOf(lb.Region.Slug)
	}
	for _, f := range lb.ForwardingRules {
		out.ForwardingRules = append(out.ForwardingRules, wireForwardingRule{EntryProtocol: f.EntryProtocol,
			EntryPort: f.EntryPort, TargetProtocol: f.TargetProtocol, TargetPort: f.TargetPort,
			CertificateID: f.CertificateID, TLSPassthrough: f.TlsPassthrough})
	}
	if hc := lb.HealthCheck; hc != nil {
		out.HealthCheck = &wireHealthCheck{Protocol: hc.Protocol, Port: hc.Port, Path: hc.Path,
			CheckIntervalSeconds: hc.CheckIntervalSeconds, ResponseTimeoutSeconds: hc.ResponseTimeoutSeconds,
			HealthyThreshold: hc.HealthyThreshold, UnhealthyThreshold: hc.UnhealthyThreshold}
	}
	out.StickySessions = &wireStickySessions{Type: "none"}
	if ss := lb.StickySessions; ss != nil && ss.Type != "" {
		out.StickySessions = &wireStickySessions{Type: ss.Type, CookieName: ss.CookieName, CookieTTLSeconds: ss.CookieTtlSeconds}
	}
	if fw := lb.Firewall; fw != nil {
		out.Firewall = &wireFirewall{Allow: orEmpty(fw.Allow), Deny: orEmpty(fw.Deny)}
	}
	if g := lb.GLBSettings; g != nil {
		out.GLBSettings = &wireGLBSettings{TargetProtocol: g.TargetProtocol, TargetPort: g.TargetPort,
			RegionPriorities: g.RegionPriorities, FailoverThreshold: g.FailoverThreshold}
		if g.CDN != nil {
			out.GLBSettings.CDN.IsEnabled = g.CDN.IsEnabled
		}
	}
	for _, d := range lb.Domains {
		if d != nil {
			out.Domains = append(out.Domains, wireLBDomain{Name: d.Name, IsManaged: d.IsManaged,
				CertificateID: d.CertificateID, Status: d.Status})
		}
	}
	return out
}

// wireVPC is a vpc object.
type wireVPC struct {
	ID          string `json:"id"`
	URN         string `json:"urn"`
	Name        string `json:"name"`
	Description string `json:"description"`
	Region      string `json:"region"`
	IPRange     string `json:"ip_range"`
	CreatedAt   string `json:"created_at"`
	Default     bool   `json:"default"`
}

func wireVPCOf(v godo.VPC) wireVPC {
	return wireVPC{ID: v.ID, URN: v.URN, Name: v.Name, Description: v.Description, Region: v.RegionSlug,
		IPRange: v.IPRange, CreatedAt: stamp(v.CreatedAt), Default: v.Default}
}

// wireCertificate is a certificate object.
type wireCertificate struct {
	ID              string   `json:"id"`
	Name            string   `json:"name"`
	NotAfter        string   `json:"not_after"`
	SHA1Fingerprint string   `json:"sha1_fingerprint"`
	CreatedAt       string   `json:"created_at"`
	DNSNames        []string `json:"dns_names"`
	State           string   `json:"state"`
	Type            string   `json:"type"`
}

func wireCertificateOf(c godo.Certificate) wireCertificate {
	return wireCertificate{ID: c.ID, Name: c.Name, NotAfter: c.NotAfter, SHA1Fingerprint: c.SHA1Fingerprint,
		CreatedAt: c.Created, DNSNames: orEmpty(c.DNSNames), State: c.State, Type: c.Type}
}

// wireAction is an action object (GET /v2/actions/{id}).
type wireAction struct {
	ID           int         `json:"id"`
	Status       string      `json:"status"`
	Type         string      `json:"type"`
	StartedAt    string      `json:"started_at"`
	CompletedAt  *string     `json:"completed_at"`
	ResourceID   int         `json:"resource_id"`
	ResourceType string      `json:"resource_type"`
	Region       *wireRegion `json:"region"`
	RegionSlug   string      `json:"region_slug"`
}

// wireLinks is the links object; pages and actions appear only when there are some.
type wireLinks struct {
	Pages   *godo.Pages       `json:"pages,omitempty"`
	Actions []godo.LinkAction `json:"actions,omitempty"`
}

// wireMeta is the meta object of a list answer.
type wireMeta struct {
	Total int `json:"total"`
}

// orEmpty turns a nil slice into an empty one, so it is encoded as [] instead of null.
func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return slices.Clone(s)
}

// actionHref is the absolute URL of an action, as DigitalOcean's links carry it.
func actionHref(base string, id int) string {
	return base + "/v2/actions/" + strconv.Itoa(id)
}

// wirePage converts a page's links and meta to the wire shapes.
func wirePage(p pageOf) (wireLinks, wireMeta) {
	l := wireLinks{}
	if p.links != nil {
		l.Pages = p.links.Pages
	}
	m := wireMeta{}
	if p.meta != nil {
		m.Total = p.meta.Total
	}
	return l, m
}
