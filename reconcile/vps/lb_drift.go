package vps

import (
	"bytes"
	"net/netip"
	"slices"
	"strings"

	"better-compute.dev/compute/provider"
	"better-compute.dev/compute/store"
)

// outOfBand names the parts of the load balancer someone else changed at the provider (empty:
// none), which the pass then puts back and publishes as providerLoadBalancer.drifted. A
// difference from the desired state is someone else's only when all of these hold:
//   - the tenant's settings did not move since the provider last took them (applied_version
//     is spec_version): a change of ours not applied yet differs from the provider too, and
//     the update that follows is the change itself, not a repair;
//   - a converged pass recorded what the provider showed then (observed_digest) and the
//     provider now shows something else: its copy changed, not only our wish;
//   - what it shows differs from what we last sent: the machines we last applied
//     (reached_machine_ids), not those the pool reaches now, since an instance gaining or
//     losing a machine moves our desired state without moving spec_version.
//
// Only the names of the parts are returned: never their values (a certificate id, a source
// range), so the event carries nothing a tenant did not already know it has.
func outOfBand(row store.LoadBalancer, want provider.LoadBalancerSpec, got *provider.LoadBalancer) []string {
	if got == nil || row.AppliedVersion < row.SpecVersion || row.ObservedDigest == nil ||
		bytes.Equal(listedDigest(got), row.ObservedDigest) {
		return nil
	}
	applied := want
	if want.Scope != provider.ScopeGlobal {
		applied.MachineIDs = row.ReachedMachineIDs
	}
	return lbDrift(applied, *got)
}

// lbDrift names the parts of the desired state the provider does not hold (empty: none). It
// compares only what the reconciler sets, in a normal form: machines, targets, sources and
// domains as sets, forwarding rules by entry port, protocols in lower case, and of a health
// check only the fields the tenant gave (zero means the provider's default); the provider
// settings with a setting left out standing for the provider's default. The VPC, the region,
// network and networkStack are not compared, nor are tags: the provider fixes them at create,
// and a PUT never tries to change them.
func lbDrift(want provider.LoadBalancerSpec, got provider.LoadBalancer) []string {
	var out []string
	add := func(part string, differs bool) {
		if differs {
			out = append(out, part)
		}
	}
	have := got.Spec
	if want.Scope == provider.ScopeGlobal {
		add("targets", !sameSet(want.TargetLoadBalancerIDs, got.TargetLoadBalancerIDs))
		add("domains", !sameSet(domainKeys(want.Domains), domainKeys(have.Domains)))
	} else {
		add("machines", !sameSet(want.MachineIDs, got.MachineIDs))
	}
	add("forwarding", !slices.Equal(ruleKeys(want.Forwarding), ruleKeys(have.Forwarding)))
	add("healthCheck", !healthMatches(want.HealthCheck, have.HealthCheck))
	add("stickySessions", !stickyMatches(want.StickySessions, have.StickySessions))
	add("sourceRanges", !sameSet(sourceKeys(want.AllowSources), sourceKeys(have.AllowSources)) ||
		!sameSet(sourceKeys(want.DenySources), sourceKeys(have.DenySources)))
	add("redirectHttpToHttps", want.RedirectHTTPToHTTPS != have.RedirectHTTPToHTTPS)
	if want.Scope != provider.ScopeGlobal {
		add("sizeUnit", orDefault(want.SizeUnit, defaultSizeUnit) != orDefault(have.SizeUnit, defaultSizeUnit))
	}
	add("httpIdleTimeoutSeconds", orDefault(want.HTTPIdleTimeoutSeconds, defaultHTTPIdleTimeout) !=
		orDefault(have.HTTPIdleTimeoutSeconds, defaultHTTPIdleTimeout))
	add("enableProxyProtocol", want.EnableProxyProtocol != have.EnableProxyProtocol)
	add("enableBackendKeepalive", want.EnableBackendKeepalive != have.EnableBackendKeepalive)
	add("tlsCipherPolicy", !strings.EqualFold(orDefault(want.TLSCipherPolicy, "default"), orDefault(have.TLSCipherPolicy, "default")))
	add("disableLetsEncryptDnsRecords", want.DisableLetsEncryptDNSRecords != have.DisableLetsEncryptDNSRecords)
	return out
}

// DigitalOcean's defaults, which a setting the tenant left out stands for: the PUT that repairs
// drift leaves the setting out, and DigitalOcean resets it to these.
const (
	defaultSizeUnit        = 1
	defaultHTTPIdleTimeout = 60
)

func orDefault[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// sameSet reports whether a and b hold the same strings, ignoring order and repeats.
func sameSet(a, b []string) bool {
	return slices.Equal(setOf(a), setOf(b))
}

func setOf(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return slices.Compact(out)
}

// ruleKey is a forwarding rule in normal form.
type ruleKey struct {
	entryProto  string
	entryPort   int
	targetProto string
	targetPort  int
	certID      string
	passthrough bool
}

func ruleKeys(rules []provider.ForwardingRule) []ruleKey {
	out := make([]ruleKey, 0, len(rules))
	for _, f := range rules {
		out = append(out, ruleKey{strings.ToLower(f.EntryProtocol), f.EntryPort, strings.ToLower(f.TargetProtocol),
			f.TargetPort, f.CertificateID, f.TLSPassthrough})
	}
	slices.SortFunc(out, func(a, b ruleKey) int {
		if a.entryPort != b.entryPort {
			return a.entryPort - b.entryPort
		}
		return strings.Compare(a.entryProto, b.entryProto)
	})
	return out
}

// healthMatches: no desired check leaves the provider's own; a desired one must match in
// every field the tenant gave.
func healthMatches(want, got *provider.HealthCheck) bool {
	if want == nil {
		return true
	}
	if got == nil {
		return false
	}
	intOK := func(w, g int) bool { return w == 0 || w == g }
	return strings.EqualFold(want.Protocol, got.Protocol) && intOK(want.Port, got.Port) &&
		(want.Path == "" || want.Path == got.Path) && intOK(want.IntervalSeconds, got.IntervalSeconds) &&
		intOK(want.TimeoutSeconds, got.TimeoutSeconds) && intOK(want.HealthyThreshold, got.HealthyThreshold) &&
		intOK(want.UnhealthyThreshold, got.UnhealthyThreshold)
}

func stickyMatches(want, got *provider.StickySessions) bool {
	if want == nil || got == nil {
		return want == nil && got == nil
	}
	return *want == *got
}

// sourceKeys writes addresses and prefixes canonically ("10.0.0.0/8", "1.2.3.4"), dropping the
// provider's "ip:" and "cidr:" prefixes if any are left.
func sourceKeys(sources []string) []string {
	out := make([]string, 0, len(sources))
	for _, s := range sources {
		s = strings.TrimSpace(s)
		if v, found := strings.CutPrefix(s, "ip:"); found {
			s = v
		} else if v, found := strings.CutPrefix(s, "cidr:"); found {
			s = v
		}
		if p, err := netip.ParsePrefix(s); err == nil {
			s = p.String()
		} else if a, err := netip.ParseAddr(s); err == nil {
			s = a.String()
		}
		out = append(out, s)
	}
	return out
}

func domainKeys(domains []provider.Domain) []string {
	out := make([]string, 0, len(domains))
	for _, d := range domains {
		out = append(out, strings.ToLower(d.Name)+"|"+d.CertificateID)
	}
	return out
}
