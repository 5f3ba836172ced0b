package loadbalancers

import (
	"maps"
	"strings"

	"better-compute.dev/compute/apierr"
	v1 "better-compute.dev/compute/gen/go/bettercompute/compute/v1"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// lbUpdateCallFields are the fields of UpdateLoadBalancerRequest that name or qualify the call;
// every other field is a part of the load balancer an update replaces.
var lbUpdateCallFields = map[protoreflect.Name]bool{
	"tenant_id": true, "load_balancer_id": true, "update_mask": true, "etag": true, "validate_only": true,
}

// lbUpdateParts are the request's part fields, read from its descriptor so that a new setting
// is a part by being a field.
var lbUpdateParts = func() []protoreflect.FieldDescriptor {
	var parts []protoreflect.FieldDescriptor
	fields := (&v1.UpdateLoadBalancerRequest{}).ProtoReflect().Descriptor().Fields()
	for i := range fields.Len() {
		if f := fields.Get(i); !lbUpdateCallFields[f.Name()] {
			parts = append(parts, f)
		}
	}
	return parts
}()

// lbUpdatePaths maps every accepted update_mask path (a part's proto name, and its JSON name) to
// the part's name as events report it (its JSON name).
var lbUpdatePaths = func() map[string]string {
	paths := map[string]string{}
	for _, f := range lbUpdateParts {
		paths[string(f.Name())], paths[f.JSONName()] = f.JSONName(), f.JSONName()
	}
	return paths
}()

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
	// Present: a message or optional field set, a list or map not empty.
	m := r.ProtoReflect()
	for _, f := range lbUpdateParts {
		given[f.JSONName()] = m.Has(f)
	}
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
