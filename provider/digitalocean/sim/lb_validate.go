package sim

import (
	"net/netip"
	"regexp"
	"slices"
	"strings"

	"github.com/digitalocean/godo"
)

// Limits the simulator enforces on a load balancer request.
const (
	maxForwardingRules = 15
	maxLBNameLen       = 255
)

var (
	entryProtocols  = []string{"http", "https", "http2", "http3", "tcp", "udp"}
	targetProtocols = []string{"http", "https", "http2", "tcp", "udp"}
	cookieName      = regexp.MustCompile(`^[A-Za-z0-9_-]{1,40}$`)
	hostname        = regexp.MustCompile(`^(\*\.)?([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)*[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?$`)
)

// normalizeLB checks a create (prev nil) or replace (prev set) request the way DigitalOcean
// does and returns the load balancer it describes, with every absent field at its default: a
// PUT replaces the whole object, so what the request leaves out is reset.
func (c *call) normalizeLB(req *godo.LoadBalancerRequest, prev *lbRecord) (godo.LoadBalancer, *apiError) {
	out := godo.LoadBalancer{Name: strings.TrimSpace(req.Name)}
	if out.Name == "" {
		return out, errInvalid("name is required")
	}
	if len(out.Name) > maxLBNameLen || strings.ContainsAny(out.Name, " \t\r\n") {
		return out, errInvalid("name must be at most %d characters without spaces", maxLBNameLen)
	}
	typ := strings.ToUpper(req.Type)
	if typ == "" {
		typ = godo.LoadBalancerTypeRegional
	}
	switch typ {
	case godo.LoadBalancerTypeRegional, godo.LoadBalancerTypeRegionalNetwork, godo.LoadBalancerTypeGlobal:
	default:
		return out, errInvalid("type must be one of REGIONAL, REGIONAL_NETWORK or GLOBAL")
	}
	if prev != nil && prev.lb.Type != typ {
		return out, errInvalid("type cannot be changed from %s to %s", prev.lb.Type, typ)
	}
	out.Type = typ
	if len(req.DropletIDs) > 0 && req.Tag != "" {
		return out, errInvalid("droplet_ids and tag are mutually exclusive: specify one of them")
	}
	var err *apiError
	if typ == godo.LoadBalancerTypeGlobal {
		err = c.checkGlobal(req, &out)
	} else {
		err = c.checkRegional(req, &out, prev)
	}
	if err != nil {
		return out, err
	}
	if out.ForwardingRules, err = c.checkForwarding(req.ForwardingRules); err != nil {
		return out, err
	}
	if out.HealthCheck, err = checkHealth(req.HealthCheck); err != nil {
		return out, err
	}
	if out.StickySessions, err = checkSticky(req.StickySessions); err != nil {
		return out, err
	}
	if out.Firewall, err = checkFirewall(req.Firewall); err != nil {
		return out, err
	}
	if err = checkSizeAndAlgorithm(req, &out); err != nil {
		return out, err
	}
	out.RedirectHttpToHttps = req.RedirectHttpToHttps
	out.EnableProxyProtocol = req.EnableProxyProtocol
	out.EnableBackendKeepalive = req.EnableBackendKeepalive
	out.DisableLetsEncryptDNSRecords = req.DisableLetsEncryptDNSRecords
	out.ProjectID = req.ProjectID
	if err = checkSettings(req, &out, prev); err != nil {
		return out, err
	}
	return out, nil
}

// Bounds and choices of the load balancer settings, as DigitalOcean documents them.
const (
	minSizeUnit, maxSizeUnit = 1, 100
	minIdleTimeout           = 30
	maxIdleTimeout           = 600
	defaultIdleTimeout       = 60
)

var (
	networks       = []string{godo.LoadBalancerNetworkTypeExternal, godo.LoadBalancerNetworkTypeInternal}
	networkStacks  = []string{godo.LoadBalancerNetworkStackIPv4, godo.LoadBalancerNetworkStackDualstack}
	cipherPolicies = []string{godo.LoadBalancerTLSCipherPolicyDefault, godo.LoadBalancerTLSCipherPolicyStrong}
)

// checkSettings validates the idle timeout, network, network stack and TLS cipher policy and
// stores them with their defaults. network and network_stack are fixed at create: a PUT that
// gives another value is refused, and one that leaves them out keeps them.
func checkSettings(req *godo.LoadBalancerRequest, out *godo.LoadBalancer, prev *lbRecord) *apiError {
	idle := uint64(defaultIdleTimeout)
	if req.HTTPIdleTimeoutSeconds != nil {
		idle = *req.HTTPIdleTimeoutSeconds
	}
	if idle < minIdleTimeout || idle > maxIdleTimeout {
		return errInvalid("http_idle_timeout_seconds must be between %d and %d", minIdleTimeout, maxIdleTimeout)
	}
	out.HTTPIdleTimeoutSeconds = &idle
	var err *apiError
	if out.Network, err = choice("network", req.Network, networks); err != nil {
		return err
	}
	if out.NetworkStack, err = choice("network_stack", req.NetworkStack, networkStacks); err != nil {
		return err
	}
	if out.TLSCipherPolicy, err = choice("tls_cipher_policy", req.TLSCipherPolicy, cipherPolicies); err != nil {
		return err
	}
	if prev == nil {
		return nil
	}
	if req.Network == "" {
		out.Network = prev.lb.Network
	} else if out.Network != prev.lb.Network {
		return errInvalid("network cannot be changed from %s to %s", prev.lb.Network, out.Network)
	}
	if req.NetworkStack == "" {
		out.NetworkStack = prev.lb.NetworkStack
	} else if out.NetworkStack != prev.lb.NetworkStack {
		return errInvalid("network_stack cannot be changed from %s to %s", prev.lb.NetworkStack, out.NetworkStack)
	}
	return nil
}

// choice checks an enum field (case-insensitive) and returns it in upper case, or the first
// choice (the default) when the field is empty.
func choice(field, v string, choices []string) (string, *apiError) {
	if v == "" {
		return choices[0], nil
	}
	v = strings.ToUpper(v)
	if !slices.Contains(choices, v) {
		return "", errInvalid("%s must be one of %s", field, strings.Join(choices, ", "))
	}
	return v, nil
}

// checkRegional validates placement: the region, the VPC (the region's default when empty)
// and that every droplet is in both. Neither region nor VPC may change on a PUT.
func (c *call) checkRegional(req *godo.LoadBalancerRequest, out *godo.LoadBalancer, prev *lbRecord) *apiError {
	region := strings.ToLower(req.Region)
	if region == "" {
		return errInvalid("region is required for %s load balancers", out.Type)
	}
	if _, known := regions[region]; !known {
		return errInvalid("region %q is not available", region)
	}
	if prev != nil && prev.lb.Region != nil && prev.lb.Region.Slug != region {
		return errInvalid("region cannot be changed from %s to %s", prev.lb.Region.Slug, region)
	}
	vpc := c.acct.defaultVPC(region)
	if req.VPCUUID != "" {
		vpc = c.acct.vpcs[req.VPCUUID]
		if vpc == nil {
			return errInvalid("vpc_uuid %s does not exist", req.VPCUUID)
		}
		if vpc.vpc.RegionSlug != region {
			return errInvalid("vpc %s is in region %s, not in %s", vpc.vpc.ID, vpc.vpc.RegionSlug, region)
		}
	}
	if prev != nil && prev.lb.VPCUUID != vpc.vpc.ID {
		return errInvalid("vpc_uuid cannot be changed from %s to %s", prev.lb.VPCUUID, vpc.vpc.ID)
	}
	switch {
	case len(req.TargetLoadBalancerIDs) > 0:
		return errInvalid("target_load_balancer_ids is only valid for GLOBAL load balancers")
	case req.GLBSettings != nil:
		return errInvalid("glb_settings is only valid for GLOBAL load balancers")
	case len(req.Domains) > 0:
		return errInvalid("domains is only valid for GLOBAL load balancers")
	}
	ids, err := c.checkDroplets(req.DropletIDs, region, vpc.vpc.ID)
	if err != nil {
		return err
	}
	out.Region = regionObject(region)
	out.VPCUUID = vpc.vpc.ID
	out.DropletIDs = ids
	out.Tag = req.Tag
	return nil
}

// checkDroplets requires every droplet to exist in the account, in region and in vpc, and
// returns the ids without repeats.
func (c *call) checkDroplets(ids []int, region, vpc string) ([]int, *apiError) {
	var out []int
	for _, id := range ids {
		d := c.acct.droplets[id]
		switch {
		case d == nil:
			return nil, errInvalid("droplet %d does not exist", id)
		case d.d.Region.Slug != region:
			return nil, errInvalid("droplet %d is in region %s; the load balancer is in %s", id, d.d.Region.Slug, region)
		case d.d.VPCUUID != vpc:
			return nil, errInvalid("droplet %d is not in the load balancer's VPC %s", id, vpc)
		}
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out, nil
}

// checkGlobal validates a GLOBAL load balancer: regional targets that exist, glb_settings and
// domains whose certificates exist. It has no region, VPC or droplets.
func (c *call) checkGlobal(req *godo.LoadBalancerRequest, out *godo.LoadBalancer) *apiError {
	if len(req.DropletIDs) > 0 || req.Tag != "" {
		return errInvalid("droplet_ids and tag are not valid for GLOBAL load balancers; use target_load_balancer_ids")
	}
	if len(req.TargetLoadBalancerIDs) == 0 {
		return errInvalid("target_load_balancer_ids is required for GLOBAL load balancers")
	}
	var targets []string
	for _, id := range req.TargetLoadBalancerIDs {
		t := c.acct.loadBalancers[id]
		if t == nil {
			return errInvalid("target load balancer %s does not exist", id)
		}
		if t.lb.Type == godo.LoadBalancerTypeGlobal {
			return errInvalid("target load balancer %s is GLOBAL; targets must be regional", id)
		}
		if !slices.Contains(targets, id) {
			targets = append(targets, id)
		}
	}
	g := req.GLBSettings
	if g == nil {
		return errInvalid("glb_settings is required for GLOBAL load balancers")
	}
	// The documented values are lower case; the API refuses any other spelling.
	proto := g.TargetProtocol
	if proto != "http" && proto != "https" && proto != "http2" {
		return errInvalid("glb_settings.target_protocol must be one of http, https, http2")
	}
	if g.TargetPort < 1 || g.TargetPort > 65535 {
		return errInvalid("glb_settings.target_port must be between 1 and 65535")
	}
	settings := &godo.GLBSettings{TargetProtocol: proto, TargetPort: g.TargetPort, CDN: &godo.CDNSettings{},
		FailoverThreshold: g.FailoverThreshold}
	if g.CDN != nil {
		settings.CDN.IsEnabled = g.CDN.IsEnabled
	}
	if len(g.RegionPriorities) > 0 {
		settings.RegionPriorities = map[string]uint32{}
		for k, v := range g.RegionPriorities {
			settings.RegionPriorities[k] = v
		}
	}
	var domains []*godo.LBDomain
	for _, d := range req.Domains {
		if d == nil || !hostname.MatchString(d.Name) {
			return errInvalid("domain names must be valid host names")
		}
		if slices.ContainsFunc(domains, func(x *godo.LBDomain) bool { return strings.EqualFold(x.Name, d.Name) }) {
			return errInvalid("domain %s is listed more than once", d.Name)
		}
		if d.CertificateID != "" && c.acct.certificates[d.CertificateID] == nil {
			return errInvalid("certificate %s does not exist", d.CertificateID)
		}
		domains = append(domains, &godo.LBDomain{Name: strings.ToLower(d.Name), IsManaged: d.IsManaged,
			CertificateID: d.CertificateID, Status: "ACTIVE"})
	}
	out.TargetLoadBalancerIDs = targets
	out.GLBSettings = settings
	out.Domains = domains
	return nil
}

// checkForwarding validates the rules: known protocols and ports, one rule per entry port,
// and a usable certificate (or TLS passthrough) for every TLS entry.
func (c *call) checkForwarding(rules []godo.ForwardingRule) ([]godo.ForwardingRule, *apiError) {
	if len(rules) == 0 {
		return nil, errInvalid("forwarding_rules is required: at least one rule")
	}
	if len(rules) > maxForwardingRules {
		return nil, errInvalid("at most %d forwarding rules are allowed", maxForwardingRules)
	}
	out := make([]godo.ForwardingRule, 0, len(rules))
	seen := map[int]bool{}
	for _, f := range rules {
		f.EntryProtocol = strings.ToLower(f.EntryProtocol)
		f.TargetProtocol = strings.ToLower(f.TargetProtocol)
		if !slices.Contains(entryProtocols, f.EntryProtocol) {
			return nil, errInvalid("entry_protocol %q is not one of %s", f.EntryProtocol, strings.Join(entryProtocols, ", "))
		}
		if !slices.Contains(targetProtocols, f.TargetProtocol) {
			return nil, errInvalid("target_protocol %q is not one of %s", f.TargetProtocol, strings.Join(targetProtocols, ", "))
		}
		if f.EntryPort < 1 || f.EntryPort > 65535 || f.TargetPort < 1 || f.TargetPort > 65535 {
			return nil, errInvalid("entry_port and target_port must be between 1 and 65535")
		}
		if seen[f.EntryPort] {
			return nil, errInvalid("entry port %d is used by more than one forwarding rule", f.EntryPort)
		}
		seen[f.EntryPort] = true
		if err := matchProtocols(f); err != nil {
			return nil, err
		}
		if err := c.checkTLS(f); err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, nil
}

// matchProtocols: a layer-4 entry forwards to the same protocol, an HTTP entry to an HTTP one.
func matchProtocols(f godo.ForwardingRule) *apiError {
	switch f.EntryProtocol {
	case "tcp", "udp":
		if f.TargetProtocol != f.EntryProtocol {
			return errInvalid("a %s entry must forward to %s, not %s", f.EntryProtocol, f.EntryProtocol, f.TargetProtocol)
		}
	default:
		if f.TargetProtocol == "tcp" || f.TargetProtocol == "udp" {
			return errInvalid("an %s entry must forward to http, https or http2, not %s", f.EntryProtocol, f.TargetProtocol)
		}
	}
	return nil
}

// checkTLS: https/http2/http3 entries need a verified certificate of the account, or (https
// only) TLS passthrough to an https target; other entries take neither.
func (c *call) checkTLS(f godo.ForwardingRule) *apiError {
	tls := f.EntryProtocol == "https" || f.EntryProtocol == "http2" || f.EntryProtocol == "http3"
	switch {
	case !tls && (f.CertificateID != "" || f.TlsPassthrough):
		return errInvalid("certificate_id and tls_passthrough are only valid for https and http2 entries (entry port %d)", f.EntryPort)
	case !tls:
		return nil
	case f.TlsPassthrough && f.CertificateID != "":
		return errInvalid("certificate_id and tls_passthrough are mutually exclusive (entry port %d)", f.EntryPort)
	case f.TlsPassthrough && (f.EntryProtocol != "https" || f.TargetProtocol != "https"):
		return errInvalid("tls_passthrough needs an https entry and an https target (entry port %d)", f.EntryPort)
	case f.TlsPassthrough:
		return nil
	case f.CertificateID == "":
		return errInvalid("a %s forwarding rule needs a certificate_id or tls_passthrough (entry port %d)", f.EntryProtocol, f.EntryPort)
	}
	cert := c.acct.certificates[f.CertificateID]
	if cert == nil {
		return errInvalid("certificate %s does not exist", f.CertificateID)
	}
	if state := c.s.certState(cert, c.now); state != "verified" {
		return errInvalid("certificate %s is %s; only a verified certificate can be used", f.CertificateID, state)
	}
	return nil
}

// checkHealth fills DigitalOcean's health check defaults and validates the ranges.
func checkHealth(in *godo.HealthCheck) (*godo.HealthCheck, *apiError) {
	hc := &godo.HealthCheck{Protocol: "http", Port: 80, Path: "/", CheckIntervalSeconds: 10,
		ResponseTimeoutSeconds: 5, HealthyThreshold: 5, UnhealthyThreshold: 3}
	if in != nil {
		if in.Protocol != "" {
			hc.Protocol = strings.ToLower(in.Protocol)
		}
		hc.Port = orDefaultInt(in.Port, hc.Port)
		hc.Path = orDefault(in.Path, hc.Path)
		hc.CheckIntervalSeconds = orDefaultInt(in.CheckIntervalSeconds, hc.CheckIntervalSeconds)
		hc.ResponseTimeoutSeconds = orDefaultInt(in.ResponseTimeoutSeconds, hc.ResponseTimeoutSeconds)
		hc.HealthyThreshold = orDefaultInt(in.HealthyThreshold, hc.HealthyThreshold)
		hc.UnhealthyThreshold = orDefaultInt(in.UnhealthyThreshold, hc.UnhealthyThreshold)
		hc.ProxyProtocol = in.ProxyProtocol
	}
	switch {
	case hc.Protocol != "http" && hc.Protocol != "https" && hc.Protocol != "tcp":
		return nil, errInvalid("health_check.protocol must be http, https or tcp")
	case hc.Port < 1 || hc.Port > 65535:
		return nil, errInvalid("health_check.port must be between 1 and 65535")
	case hc.CheckIntervalSeconds < 3 || hc.CheckIntervalSeconds > 300:
		return nil, errInvalid("health_check.check_interval_seconds must be between 3 and 300")
	case hc.ResponseTimeoutSeconds < 3 || hc.ResponseTimeoutSeconds > 300:
		return nil, errInvalid("health_check.response_timeout_seconds must be between 3 and 300")
	case hc.HealthyThreshold < 2 || hc.HealthyThreshold > 10:
		return nil, errInvalid("health_check.healthy_threshold must be between 2 and 10")
	case hc.UnhealthyThreshold < 2 || hc.UnhealthyThreshold > 10:
		return nil, errInvalid("health_check.unhealthy_threshold must be between 2 and 10")
	}
	if hc.Protocol == "tcp" {
		hc.Path = ""
	}
	return hc, nil
}

// checkSticky accepts none (the default) or cookies with a name and a ttl.
func checkSticky(in *godo.StickySessions) (*godo.StickySessions, *apiError) {
	if in == nil || in.Type == "" || in.Type == "none" {
		return &godo.StickySessions{Type: "none"}, nil
	}
	if in.Type != "cookies" {
		return nil, errInvalid("sticky_sessions.type must be none or cookies")
	}
	if !cookieName.MatchString(in.CookieName) {
		return nil, errInvalid("sticky_sessions.cookie_name must be 1-40 letters, digits, '-' or '_'")
	}
	if in.CookieTtlSeconds < 1 {
		return nil, errInvalid("sticky_sessions.cookie_ttl_seconds must be positive")
	}
	out := *in
	return &out, nil
}

// checkFirewall accepts entries "ip:<address>" and "cidr:<prefix>" only.
func checkFirewall(in *godo.LBFirewall) (*godo.LBFirewall, *apiError) {
	if in == nil || len(in.Allow)+len(in.Deny) == 0 {
		return nil, nil
	}
	for _, list := range [][]string{in.Allow, in.Deny} {
		for _, e := range list {
			if !validFirewallEntry(e) {
				return nil, errInvalid("firewall rule %q must look like ip:1.2.3.4 or cidr:10.0.0.0/8", e)
			}
		}
	}
	return &godo.LBFirewall{Allow: slices.Clone(in.Allow), Deny: slices.Clone(in.Deny)}, nil
}

func validFirewallEntry(e string) bool {
	kind, value, found := strings.Cut(e, ":")
	if !found {
		return false
	}
	switch kind {
	case "ip":
		_, err := netip.ParseAddr(value)
		return err == nil
	case "cidr":
		_, err := netip.ParsePrefix(value)
		return err == nil
	}
	return false
}

// checkSizeAndAlgorithm: size and size_unit exclude each other; one node and round robin are
// the defaults.
func checkSizeAndAlgorithm(req *godo.LoadBalancerRequest, out *godo.LoadBalancer) *apiError {
	if req.SizeSlug != "" && req.SizeUnit != 0 {
		return errInvalid("size and size_unit are mutually exclusive")
	}
	out.SizeSlug, out.SizeUnit = req.SizeSlug, req.SizeUnit
	if out.SizeUnit != 0 && out.Type == godo.LoadBalancerTypeGlobal {
		return errInvalid("size_unit is not valid for GLOBAL load balancers")
	}
	if out.SizeUnit != 0 && (out.SizeUnit < minSizeUnit || out.SizeUnit > maxSizeUnit) {
		return errInvalid("size_unit must be between %d and %d", minSizeUnit, maxSizeUnit)
	}
	if out.SizeSlug == "" && out.SizeUnit == 0 && out.Type != godo.LoadBalancerTypeGlobal {
		out.SizeUnit = 1
	}
	out.Algorithm = orDefault(req.Algorithm, "round_robin")
	if out.Algorithm != "round_robin" && out.Algorithm != "least_connections" {
		return errInvalid("algorithm must be round_robin or least_connections")
	}
	return nil
}

func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

func orDefaultInt(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}
