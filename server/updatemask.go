package server

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
)

// updateMaskParts are the JSON keys of an update body that name a part it replaces, in the
// order the mask lists them. The proto names are accepted too, as protojson accepts them.
var updateMaskParts = []struct{ json, proto string }{
	{"targets", "targets"}, {"forwarding", "forwarding"}, {"healthCheck", "health_check"},
	{"stickySessions", "sticky_sessions"}, {"sourceRanges", "source_ranges"},
	{"redirectHttpToHttps", "redirect_http_to_https"}, {"domains", "domains"},
	{"deletionProtection", "deletion_protection"},
	{"sizeUnit", "size_unit"}, {"httpIdleTimeoutSeconds", "http_idle_timeout_seconds"},
	{"enableProxyProtocol", "enable_proxy_protocol"}, {"enableBackendKeepalive", "enable_backend_keepalive"},
	{"network", "network"}, {"networkStack", "network_stack"}, {"tlsCipherPolicy", "tls_cipher_policy"},
	{"disableLetsEncryptDnsRecords", "disable_lets_encrypt_dns_records"}, {"labels", "labels"},
}

// maxMaskedBody bounds what the mapping reads to derive a mask; a larger body goes on untouched
// and Connect refuses it with its own limit.
const maxMaskedBody = 4 << 20

// withUpdateMask gives a JSON update body the presence its keys carry: every part key present
// (even [] or null) goes into updateMask, so "domains": [] empties the domains and
// "healthCheck": null removes the health check, and a body with no part carries an empty mask
// (a no-op). A body that names its own updateMask, or is not a JSON object, is passed on as it
// came (Connect then judges it).
func withUpdateMask(r *http.Request) {
	rewriteBody(r, func(body map[string]json.RawMessage) bool {
		if _, ok := body["updateMask"]; ok {
			return false
		}
		if _, ok := body["update_mask"]; ok {
			return false
		}
		var paths []string
		for _, p := range updateMaskParts {
			_, j := body[p.json]
			_, q := body[p.proto]
			if j || q {
				paths = append(paths, p.json)
			}
		}
		body["updateMask"], _ = json.Marshal(strings.Join(paths, ","))
		return true
	})
}

// rewriteBody hands edit a JSON object body's keys and sends on what edit left when it says so.
// A body that is too large or not a JSON object is passed on as it came (Connect then judges it).
func rewriteBody(r *http.Request, edit func(body map[string]json.RawMessage) bool) {
	if r.Body == nil {
		return
	}
	raw, err := io.ReadAll(io.LimitReader(r.Body, maxMaskedBody+1))
	_ = r.Body.Close()
	r.Body = io.NopCloser(bytes.NewReader(raw))
	r.ContentLength = int64(len(raw))
	if err != nil || len(raw) > maxMaskedBody {
		return
	}
	var body map[string]json.RawMessage
	if json.Unmarshal(raw, &body) != nil || body == nil || !edit(body) {
		return
	}
	out, err := json.Marshal(body)
	if err != nil {
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(out))
	r.ContentLength = int64(len(out))
}

// withIfMatch gives a JSON update or delete body the etag its If-Match header names (AIP-154's
// HTTP spelling), unless the body names one itself. "*" (any version) and a list of several
// etags ask for no check; a weak etag (W/"...") is compared as its value.
func withIfMatch(r *http.Request) {
	tag := strings.TrimSpace(r.Header.Get("If-Match"))
	if tag == "" || tag == "*" || strings.Contains(tag, ",") {
		return
	}
	tag = strings.Trim(strings.TrimPrefix(tag, "W/"), `"`)
	rewriteBody(r, func(body map[string]json.RawMessage) bool {
		if _, ok := body["etag"]; ok {
			return false
		}
		body["etag"], _ = json.Marshal(tag)
		return true
	})
}
