package sdk

import (
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/fieldmaskpb"

	v1 "better-compute.dev/compute/gen/go/bettercompute/compute/v1"
)

// Parts of a load balancer an update replaces, as update_mask paths.
const (
	PartTargets             = "targets"
	PartForwarding          = "forwarding"
	PartHealthCheck         = "health_check"
	PartStickySessions      = "sticky_sessions"
	PartSourceRanges        = "source_ranges"
	PartRedirectHTTPToHTTPS = "redirect_http_to_https"
	PartDomains             = "domains"
	PartDeletionProtection  = "deletion_protection"

	// The provider settings (docs/loadbalancer-settings.md); clearing one returns it to the
	// provider's default. network, network_stack and labels are fixed at create.
	PartSizeUnit                     = "size_unit"
	PartHTTPIdleTimeoutSeconds       = "http_idle_timeout_seconds"
	PartEnableProxyProtocol          = "enable_proxy_protocol"
	PartEnableBackendKeepalive       = "enable_backend_keepalive"
	PartNetwork                      = "network"
	PartNetworkStack                 = "network_stack"
	PartTLSCipherPolicy              = "tls_cipher_policy"
	PartDisableLetsEncryptDNSRecords = "disable_lets_encrypt_dns_records"
	PartLabels                       = "labels"
)

// updateParts are every part, in the order a mask lists them.
var updateParts = []string{PartTargets, PartForwarding, PartHealthCheck, PartStickySessions, PartSourceRanges,
	PartRedirectHTTPToHTTPS, PartDomains, PartDeletionProtection, PartSizeUnit, PartHTTPIdleTimeoutSeconds,
	PartEnableProxyProtocol, PartEnableBackendKeepalive, PartNetwork, PartNetworkStack, PartTLSCipherPolicy,
	PartDisableLetsEncryptDNSRecords, PartLabels}

// MaskedUpdate sets req's update_mask to the parts req sets, plus the parts named in clear,
// which the update then empties or removes:
//
//	sdk.MaskedUpdate(&v1.UpdateLoadBalancerRequest{TenantId: t, LoadBalancerId: id}, sdk.PartHealthCheck, sdk.PartDomains)
//
// removes the health check and empties the domains, leaving the rest as it is. A request with
// nothing set and nothing to clear changes nothing.
func MaskedUpdate(req *v1.UpdateLoadBalancerRequest, clear ...string) *v1.UpdateLoadBalancerRequest {
	m := req.ProtoReflect()
	fields := m.Descriptor().Fields()
	seen := map[string]bool{}
	paths := []string{}
	add := func(p string) {
		if !seen[p] {
			seen[p] = true
			paths = append(paths, p)
		}
	}
	for _, p := range updateParts {
		if fd := fields.ByName(protoName(p)); fd != nil && m.Has(fd) {
			add(p)
		}
	}
	for _, p := range clear {
		add(p)
	}
	req.UpdateMask = &fieldmaskpb.FieldMask{Paths: paths}
	return req
}

func protoName(p string) protoreflect.Name { return protoreflect.Name(p) }
