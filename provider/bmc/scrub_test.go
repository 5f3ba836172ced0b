package bmc

import (
	"encoding/base64"
	"strings"
	"testing"
)

func TestScrubber(t *testing.T) {
	t.Parallel()
	const pass = `p"a<s>s/w+rd`
	s := newScrubber("admin", pass)
	for _, tc := range []struct{ reason, in string }{
		{"plain", "login with " + pass + " failed"},
		{"json escaped", `{"message":"bad password p\"a\u003cs\u003es/w+rd"}`},
		{"json escaped without html escaping", `{"message":"bad password p\"a<s>s/w+rd"}`},
		{"double json escaped", `{"error":"{\"message\":\"p\\\"a\\u003cs\\u003es/w+rd\"}"}`},
		{"url escaped", "GET /x?pw=p%22a%3Cs%3Es%2Fw%2Brd"},
		{"basic auth header", "Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte("admin:"+pass))},
	} {
		out := s.clean(tc.in)
		if strings.Contains(out, "a<s>s") || strings.Contains(out, `a\u003cs`) || strings.Contains(out, "a%3Cs") ||
			strings.Contains(out, base64.StdEncoding.EncodeToString([]byte("admin:"+pass))) {
			t.Errorf("%s: %q still shows the password", tc.reason, out)
		}
		if !strings.Contains(out, "[redacted]") {
			t.Errorf("%s: %q has no redaction marker", tc.reason, out)
		}
	}
	if out := s.clean("X-Auth-Token: 0123abcd rest"); strings.Contains(out, "0123abcd") {
		t.Errorf("session token kept: %q", out)
	}
	long := s.clean(strings.Repeat("é", 400))
	if len(long) > maxAnswer+3 || !strings.HasSuffix(long, "...") {
		t.Errorf("long answer not bounded: %d bytes", len(long))
	}
	if got := s.clean("line one\n\t* line two"); got != "line one * line two" {
		t.Errorf("not flattened: %q", got)
	}
}

func TestScrubberKeepsWords(t *testing.T) {
	t.Parallel()
	s := newScrubber("admin", "hunter2-long")
	for _, tc := range []struct{ in, want string }{
		// ipmitool's refusal and its exit status: the scrubber once made "[redacted] status 1" of it.
		{"Error: Unable to establish IPMI v2 / RMCP+ session: exit status 1", "Error: Unable to establish IPMI v2 / RMCP+ session: exit status 1"},
		{"session expired; token refresh needed", "session expired; token refresh needed"},
		{"not a InventoryGetter implementation: *ipmitool.Conn", "not supported by the driver"},
		{"provider *redfish.Conn failed", "provider the driver failed"},
		// Values still go.
		{`{"token": "abcdef0123456789"}`, `{"token": "[redacted]"}`},
		{`{"SessionToken":"abcdef0123456789"}`, `{"SessionToken":"[redacted]"}`},
		{"GET /x?session_id=abc123&x=1", "GET /x?session_id=[redacted]&x=1"},
		{"Authorization: Bearer abcdefgh12345678", "Authorization: Bearer [redacted]"},
		{"X-Auth-Token: 0123abcd", "X-Auth-Token: [redacted]"},
	} {
		if got := s.clean(tc.in); got != tc.want {
			t.Errorf("clean(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
