package digitalocean

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/digitalocean/godo"

	"better-compute.dev/compute/provider"
)

// lbRequest turns the whole desired state into a request. It is used for create and for
// update alike, because a PUT replaces the load balancer: whatever is left out is reset.
// Machines are always named by droplet id, never by tag, so a load balancer can only reach
// the droplets the reconciler computed.
func lbRequest(spec provider.LoadBalancerSpec) (*godo.LoadBalancerRequest, error) {
	req := &godo.LoadBalancerRequest{
		Name:                spec.Name,
		RedirectHttpToHttps: spec.RedirectHTTPToHTTPS,
		StickySessions:      &godo.StickySessions{Type: "none"},
	}
	for _, f := range spec.Forwarding {
		req.ForwardingRules = append(req.ForwardingRules, godo.ForwardingRule{
			EntryProtocol: strings.ToLower(f.EntryProtocol), EntryPort: f.EntryPort,
			TargetProtocol: strings.ToLower(f.TargetProtocol), TargetPort: f.TargetPort,
			CertificateID: f.CertificateID, TlsPassthrough: f.TLSPassthrough,
		})
	}
	if hc := spec.HealthCheck; hc != nil {
		req.HealthCheck = &godo.HealthCheck{
			Protocol: strings.ToLower(hc.Protocol), Port: hc.Port, Path: hc.Path,
			CheckIntervalSeconds: hc.IntervalSeconds, ResponseTimeoutSeconds: hc.TimeoutSeconds,
			HealthyThreshold: hc.HealthyThreshold, UnhealthyThreshold: hc.UnhealthyThreshold,
		}
	}
	if ss := spec.StickySessions; ss != nil {
		req.StickySessions = &godo.StickySessions{Type: "cookies", CookieName: ss.CookieName, CookieTtlSeconds: ss.TTLSeconds}
	}
	settings(spec, req)
	fw, err := firewall(spec.AllowSources, spec.DenySources)
	if err != nil {
		return nil, err
	}
	req.Firewall = fw
	switch spec.Scope {
	case "", provider.ScopeRegional:
		if len(spec.TargetLoadBalancerIDs) > 0 || len(spec.Domains) > 0 {
			return nil, errors.New("a regional load balancer takes machines, not target load balancers or domains")
		}
		req.Type = godo.LoadBalancerTypeRegional
		req.Region = spec.Region
		req.VPCUUID = spec.NetworkID
		for _, m := range spec.MachineIDs {
			id, err := strconv.Atoi(m)
			if err != nil || id <= 0 {
				return nil, fmt.Errorf("machine id %q is not a droplet id", m)
			}
			req.DropletIDs = append(req.DropletIDs, id)
		}
	case provider.ScopeGlobal:
		if len(spec.MachineIDs) > 0 {
			return nil, errors.New("a global load balancer targets load balancers, not machines")
		}
		req.Type = godo.LoadBalancerTypeGlobal
		req.TargetLoadBalancerIDs = slices.Clone(spec.TargetLoadBalancerIDs)
		if req.GLBSettings, err = glbSettings(spec.Forwarding); err != nil {
			return nil, err
		}
		for _, d := range spec.Domains {
			req.Domains = append(req.Domains, &godo.LBDomain{Name: d.Name, CertificateID: d.CertificateID})
		}
	default:
		return nil, fmt.Errorf("unknown scope %q", spec.Scope)
	}
	return req, nil
}

// settings copies the tenant's provider settings into req as DigitalOcean spells them (its enums
// in upper case). A zero value is left out, so DigitalOcean applies its default; on a PUT that
// also resets a setting the tenant no longer gives.
func settings(spec provider.LoadBalancerSpec, req *godo.LoadBalancerRequest) {
	if spec.SizeUnit > 0 {
		req.SizeUnit = uint32(spec.SizeUnit)
	}
	if spec.HTTPIdleTimeoutSeconds > 0 {
		idle := uint64(spec.HTTPIdleTimeoutSeconds)
		req.HTTPIdleTimeoutSeconds = &idle
	}
	req.EnableProxyProtocol = spec.EnableProxyProtocol
	req.EnableBackendKeepalive = spec.EnableBackendKeepalive
	if spec.DisableLetsEncryptDNSRecords {
		disable := true
		req.DisableLetsEncryptDNSRecords = &disable
	}
	req.Network = strings.ToUpper(spec.Network)
	req.NetworkStack = strings.ToUpper(spec.NetworkStack)
	req.TLSCipherPolicy = strings.ToUpper(spec.TLSCipherPolicy)
}

// glbSettings derives where a global load balancer sends traffic from the first forwarding
// rule's target: the regional load balancers it targets listen there.
func glbSettings(rules []provider.ForwardingRule) (*godo.GLBSettings, error) {
	if len(rules) == 0 {
		return nil, errors.New("a global load balancer needs a forwarding rule")
	}
	// DigitalOcean documents glb_settings.target_protocol in lower case and refuses upper case.
	proto := strings.ToLower(rules[0].TargetProtocol)
	if proto != "http" && proto != "https" && proto != "http2" {
		return nil, fmt.Errorf("a global load balancer forwards http, https or http2, not %q", rules[0].TargetProtocol)
	}
	if rules[0].TargetPort < 1 || rules[0].TargetPort > 65535 {
		return nil, fmt.Errorf("target port %d is out of range", rules[0].TargetPort)
	}
	return &godo.GLBSettings{TargetProtocol: proto, TargetPort: uint32(rules[0].TargetPort), CDN: &godo.CDNSettings{}}, nil
}

// firewall writes sources in DigitalOcean's form: "1.2.3.4" -> "ip:1.2.3.4" and
// "10.0.0.0/8" -> "cidr:10.0.0.0/8". Entries already in that form pass unchanged.
func firewall(allow, deny []string) (*godo.LBFirewall, error) {
	if len(allow)+len(deny) == 0 {
		return nil, nil
	}
	fw := &godo.LBFirewall{}
	for _, pair := range []struct {
		in  []string
		out *[]string
	}{{allow, &fw.Allow}, {deny, &fw.Deny}} {
		for _, src := range pair.in {
			e, err := firewallEntry(src)
			if err != nil {
				return nil, err
			}
			*pair.out = append(*pair.out, e)
		}
	}
	return fw, nil
}

func firewallEntry(src string) (string, error) {
	src = strings.TrimSpace(src)
	if strings.HasPrefix(src, "ip:") || strings.HasPrefix(src, "cidr:") {
		return src, nil
	}
	if strings.Contains(src, "/") {
		p, err := netip.ParsePrefix(src)
		if err != nil {
			return "", fmt.Errorf("source %q is not a CIDR", src)
		}
		return "cidr:" + p.String(), nil
	}
	a, err := netip.ParseAddr(src)
	if err != nil {
		return "", fmt.Errorf("source %q is not an IP address", src)
	}
	return "ip:" + a.String(), nil
}

// fromLB maps an observed load balancer back, including the settings it reports.
func fromLB(lb *godo.LoadBalancer) *provider.LoadBalancer {
	out := &provider.LoadBalancer{
		ID: lb.ID, Name: lb.Name, Status: lbStatus(lb.Status),
		Address: lb.IP, AddressV6: lb.IPv6, NetworkID: lb.VPCUUID,
		TargetLoadBalancerIDs: cloneOrNil(lb.TargetLoadBalancerIDs),
	}
	if lb.Region != nil {
		out.Region = lb.Region.Slug
	}
	for _, id := range lb.DropletIDs {
		out.MachineIDs = append(out.MachineIDs, strconv.Itoa(id))
	}
	spec := provider.LoadBalancerSpec{
		Name: lb.Name, Scope: provider.ScopeRegional, Region: out.Region, NetworkID: lb.VPCUUID,
		MachineIDs: slices.Clone(out.MachineIDs), TargetLoadBalancerIDs: cloneOrNil(lb.TargetLoadBalancerIDs),
		RedirectHTTPToHTTPS: lb.RedirectHttpToHttps,
	}
	if lb.Type == godo.LoadBalancerTypeGlobal {
		spec.Scope = provider.ScopeGlobal
	}
	spec.SizeUnit = int(lb.SizeUnit)
	if lb.HTTPIdleTimeoutSeconds != nil {
		spec.HTTPIdleTimeoutSeconds = int(*lb.HTTPIdleTimeoutSeconds)
	}
	spec.EnableProxyProtocol, spec.EnableBackendKeepalive = lb.EnableProxyProtocol, lb.EnableBackendKeepalive
	spec.DisableLetsEncryptDNSRecords = lb.DisableLetsEncryptDNSRecords != nil && *lb.DisableLetsEncryptDNSRecords
	spec.Network, spec.NetworkStack = strings.ToLower(lb.Network), strings.ToLower(lb.NetworkStack)
	spec.TLSCipherPolicy = strings.ToLower(lb.TLSCipherPolicy)
	spec.Tags = cloneOrNil(lb.Tags)
	for _, f := range lb.ForwardingRules {
		spec.Forwarding = append(spec.Forwarding, provider.ForwardingRule{
			EntryProtocol: f.EntryProtocol, EntryPort: f.EntryPort, TargetProtocol: f.TargetProtocol,
			TargetPort: f.TargetPort, CertificateID: f.CertificateID, TLSPassthrough: f.TlsPassthrough,
		})
	}
	if hc := lb.HealthCheck; hc != nil {
		spec.HealthCheck = &provider.HealthCheck{
			Protocol: hc.Protocol, Port: hc.Port, Path: hc.Path, IntervalSeconds: hc.CheckIntervalSeconds,
			TimeoutSeconds: hc.ResponseTimeoutSeconds, HealthyThreshold: hc.HealthyThreshold,
			UnhealthyThreshold: hc.UnhealthyThreshold,
		}
	}
	if ss := lb.StickySessions; ss != nil && ss.Type == "cookies" {
		spec.StickySessions = &provider.StickySessions{CookieName: ss.CookieName, TTLSeconds: ss.CookieTtlSeconds}
	}
	if fw := lb.Firewall; fw != nil {
		spec.AllowSources = sources(fw.Allow)
		spec.DenySources = sources(fw.Deny)
	}
	for _, d := range lb.Domains {
		if d != nil {
			spec.Domains = append(spec.Domains, provider.Domain{Name: d.Name, CertificateID: d.CertificateID})
		}
	}
	out.Spec = spec
	return out
}

// sources strips the "ip:" and "cidr:" prefixes the provider's firewall entries carry.
func sources(entries []string) []string {
	var out []string
	for _, e := range entries {
		if v, found := strings.CutPrefix(e, "ip:"); found {
			e = v
		} else if v, found := strings.CutPrefix(e, "cidr:"); found {
			e = v
		}
		out = append(out, e)
	}
	return out
}

func lbStatus(s string) provider.LoadBalancerStatus {
	switch s {
	case "active":
		return provider.LoadBalancerActive
	case "errored":
		return provider.LoadBalancerErrored
	default:
		return provider.LoadBalancerNew
	}
}

// cloneOrNil copies s, answering nil for an empty list: the API sends [] where nothing is set,
// and an observation compares equal to a spec that names nothing.
func cloneOrNil[T any](s []T) []T {
	if len(s) == 0 {
		return nil
	}
	return slices.Clone(s)
}
