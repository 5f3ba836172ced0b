package core

import (
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
	return given, nil
}
