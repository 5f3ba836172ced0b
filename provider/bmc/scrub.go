package bmc

import (
	"encoding/base64"
	"encoding/json"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"better-compute.dev/compute/seal"
)

// maxAnswer bounds what a Report or an error keeps of a BMC's answer.
const maxAnswer = 512

// scrubber removes one target's credentials from text: the password as given and in every
// encoding a driver or a BMC might echo it (JSON-escaped, URL-escaped, inside basic auth), and
// any session token that follows a token header name.
type scrubber struct{ secrets []string }

var tokenPattern = regexp.MustCompile(`(?i)(x-auth-token|authorization|token|session)(["']?\s*[:=]\s*["']?)([^\s"',;}]+)`)

func newScrubber(user string, pass seal.Secret) scrubber {
	p := pass.Reveal()
	if p == "" {
		return scrubber{}
	}
	js, _ := json.Marshal(p) // HTML-safe escaping, as Go servers write it
	var plain strings.Builder
	enc := json.NewEncoder(&plain)
	enc.SetEscapeHTML(false) // as most other servers write it
	_ = enc.Encode(p)
	js2, _ := json.Marshal(strings.Trim(string(js), `"`)) // a JSON error quoted inside another
	cands := []string{
		p,
		strings.Trim(string(js2), `"`),
		strings.Trim(string(js), `"`),
		strings.Trim(strings.TrimSpace(plain.String()), `"`),
		url.QueryEscape(p),
		url.PathEscape(p),
		base64.StdEncoding.EncodeToString([]byte(user + ":" + p)),
		base64.StdEncoding.EncodeToString([]byte(p)),
	}
	var s scrubber
	for _, c := range cands {
		if c != "" && !slices.Contains(s.secrets, c) {
			s.secrets = append(s.secrets, c)
		}
	}
	// Longest first, so no shorter form breaks up a longer one before it is found.
	slices.SortFunc(s.secrets, func(a, b string) int { return len(b) - len(a) })
	return s
}

// clean returns text without credentials, on one line, bounded in length.
func (s scrubber) clean(text string) string {
	for _, sec := range s.secrets {
		text = strings.ReplaceAll(text, sec, seal.Redacted)
	}
	text = tokenPattern.ReplaceAllString(text, "${1}${2}"+seal.Redacted)
	text = strings.Join(strings.Fields(text), " ")
	if len(text) > maxAnswer {
		text = strings.ToValidUTF8(text[:maxAnswer], "") + "..."
	}
	return text
}
