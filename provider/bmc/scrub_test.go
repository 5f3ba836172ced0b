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
