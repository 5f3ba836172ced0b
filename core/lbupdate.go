package core

import (
	"maps"
	"strings"

	"better-compute.dev/compute/apierr"
	v1 "better-compute.dev/compute/gen/go/bettercompute/compute/v1"
)

// lbUpdatePaths maps every accepted update_mask path (the proto name, and the JSON name) to the
// part's name as events report it.
var lbUpdatePaths = map[string]string{
	"targets": "targets", "forwarding": "forwarding",
	"health_check": "healthCheck", "healthCheck": "healthCheck",
	"sticky_sessions": "stickySessions", "stickySessions": "stickySessions",
	"source_ranges": "sourceRanges", "sourceRanges": "sourceRanges",
	"redirect_http_to_https": "redirectHttpToHttps", "redirectHttpToHttps": "redirectHttpToHttps",
	"domains":             "domains",
	"deletion_protection": "deletionProtection", "deletionProtection": "deletionProtection",
	"size_unit": "sizeUnit", "sizeUnit": "sizeUnit",
	"http_idle_timeout_seconds": "httpIdleTimeoutSeconds", "httpIdleTimeoutSeconds": "httpIdleTimeoutSeconds",
	"enable_proxy_protocol": "enableProxyProtocol", "enableProxyProtocol": "enableProxyProtocol",
	"enable_backend_keepalive": "enableBackendKeepalive", "enableBackendKeepalive": "enableBackendKeepalive",
	"network":       "network",
	"network_stack": "networkStack", "networkStack": "networkStack",
	"tls_cipher_policy": "tlsCipherPolicy", "tlsCipherPolicy": "tlsCipherPolicy",
	"disable_lets_encrypt_dns_records": "disableLetsEncryptDnsRecords", "disableLetsEncryptDnsRecords": "disableLetsEncryptDnsRecords",
	"labels": "labels",
}

// updateParts says which parts an update replaces. With an update_mask, exactly the parts it
// names, so a named part left out of the request is cleared; an empty mask changes nothing.
// Without one (clients older than the mask), the parts present, and an empty domains list or
// forwarding list counts as absent, as it always did.
func updateParts(r *v1.UpdateLoadBalancerRequest) (map[string]bool, error) {
	given := map[string]bool{}
	if m := r.GetUpdateMask(); m != nil {
		for _, p := range m.GetPaths() {
			part, ok := lbUpdatePaths[strings.TrimSpace(p)]
			if !ok {
				return nil, apierr.Invalid("updateMask", "updateMask names %q, which is not a part of a load balancer an update replaces", p)
			}
			given[part] = true
		}
		return given, nil
	}
	given["targets"] = r.Targets != nil
	given["forwarding"] = len(r.GetForwarding()) > 0
	given["healthCheck"] = r.HealthCheck != nil
	given["stickySessions"] = r.StickySessions != nil
	given["sourceRanges"] = r.SourceRanges != nil
	given["redirectHttpToHttps"] = r.RedirectHttpToHttps != nil
	given["domains"] = len(r.GetDomains()) > 0
	given["deletionProtection"] = r.DeletionProtection != nil
	given["sizeUnit"] = r.SizeUnit != nil
	given["httpIdleTimeoutSeconds"] = r.HttpIdleTimeoutSeconds != nil
	given["enableProxyProtocol"] = r.EnableProxyProtocol != nil
	given["enableBackendKeepalive"] = r.EnableBackendKeepalive != nil
	given["network"] = r.Network != nil
	given["networkStack"] = r.NetworkStack != nil
	given["tlsCipherPolicy"] = r.TlsCipherPolicy != nil
	given["disableLetsEncryptDnsRecords"] = r.DisableLetsEncryptDnsRecords != nil
	given["labels"] = len(r.GetLabels()) > 0
	return given, nil
}

// setLoadBalancerSettings applies the provider settings an update gives to next, through set
// (which records what changed). A setting given but absent returns to the provider's default.
func setLoadBalancerSettings(r *v1.UpdateLoadBalancerRequest, next *v1.LoadBalancer, set func(string, func())) {
	set("sizeUnit", func() { next.SizeUnit = r.SizeUnit })
	set("httpIdleTimeoutSeconds", func() { next.HttpIdleTimeoutSeconds = r.HttpIdleTimeoutSeconds })
	set("enableProxyProtocol", func() { next.EnableProxyProtocol = r.GetEnableProxyProtocol() })
	set("enableBackendKeepalive", func() { next.EnableBackendKeepalive = r.GetEnableBackendKeepalive() })
	set("tlsCipherPolicy", func() { next.TlsCipherPolicy = r.GetTlsCipherPolicy() })
	set("disableLetsEncryptDnsRecords", func() { next.DisableLetsEncryptDnsRecords = r.GetDisableLetsEncryptDnsRecords() })
}

// checkCreateOnly refuses an update that would change a setting the provider fixes when it
// makes a load balancer (network, networkStack, and labels, which it takes as tags on create
// only). Giving the value the load balancer already has is no change, so a client that sends
// back what it read is not refused. A sizeUnit on a global load balancer, which the provider
// scales itself, is refused here too (create refuses it by its validation rule).
func checkCreateOnly(r *v1.UpdateLoadBalancerRequest, given map[string]bool, cur *v1.LoadBalancer, scope string) error {
	if given["network"] && r.GetNetwork() != cur.GetNetwork() {
		return apierr.Invalid("network", "network is fixed when a load balancer is made: make a new load balancer to change it")
	}
	if given["networkStack"] && r.GetNetworkStack() != cur.GetNetworkStack() {
		return apierr.Invalid("networkStack", "networkStack is fixed when a load balancer is made: make a new load balancer to change it")
	}
	if given["labels"] && !maps.Equal(r.GetLabels(), cur.GetLabels()) {
		return apierr.Invalid("labels", "labels are fixed when a load balancer is made (the provider takes its tags on create only)")
	}
	if given["sizeUnit"] && r.SizeUnit != nil && scope == "global" {
		return apierr.Invalid("sizeUnit", "a global load balancer has no sizeUnit: the provider scales it")
	}
	return nil
}
