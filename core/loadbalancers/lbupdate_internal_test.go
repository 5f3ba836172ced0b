package loadbalancers

import (
	"maps"
	"slices"
	"testing"
)

// TestUpdatePartsAreTheRequestsSettings pins the parts read from UpdateLoadBalancerRequest's
// descriptor: a field added to the request becomes a part of the update mask, so a field that
// only qualifies the call must join lbUpdateCallFields.
func TestUpdatePartsAreTheRequestsSettings(t *testing.T) {
	want := []string{"deletionProtection", "disableLetsEncryptDnsRecords", "domains", "enableBackendKeepalive",
		"enableProxyProtocol", "forwarding", "healthCheck", "httpIdleTimeoutSeconds", "labels", "network",
		"networkStack", "redirectHttpToHttps", "sizeUnit", "sourceRanges", "stickySessions", "targets", "tlsCipherPolicy"}
	if got := slices.Sorted(maps.Keys(lbUpdatePaths)); len(got) != 2*len(want)-5 {
		t.Errorf("%d accepted paths, want %d (a proto and a JSON name per part, one where they agree): %v", len(got), 2*len(want)-5, got)
	}
	parts := slices.Sorted(maps.Values(lbUpdatePaths))
	if got := slices.Compact(parts); !slices.Equal(got, want) {
		t.Errorf("parts %v, want %v", got, want)
	}
	for path, part := range map[string]string{"redirect_http_to_https": "redirectHttpToHttps", "disableLetsEncryptDnsRecords": "disableLetsEncryptDnsRecords", "labels": "labels"} {
		if lbUpdatePaths[path] != part {
			t.Errorf("path %s names %q, want %s", path, lbUpdatePaths[path], part)
		}
	}
}
