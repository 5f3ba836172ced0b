// Package redact removes secrets from text that came back from outside the control plane: a
// provider's or a BMC's error message, which may echo the request that caused it (the API token
// in a header, a certificate's private key in the body, a BMC password). Such text ends up in
// lastError columns a tenant viewer reads, in events and in logs, so it is scrubbed once, where it
// enters, of every secret of the request, in every encoding a server might have echoed it in.
//
// Scrubbing replaces values, never words: the text around a secret keeps its meaning.
package redact

import (
	"encoding/base64"
	"encoding/json"
	"net/url"
	"regexp"
	"slices"
	"strings"
)

// Mark replaces every secret found.
const Mark = "[redacted]"

// minLineSecret is the shortest line of a multi-line secret (a PEM body) scrubbed on its own:
// shorter lines ("-----END...", blank) are not secret material.
const minLineSecret = 16

// Scrubber removes a fixed set of secrets from text. The zero value removes only what the
// patterns of Patterns find.
type Scrubber struct {
	needles []string
}

// New returns a Scrubber for the given secrets (empty ones are ignored).
func New(secrets ...string) Scrubber {
	var s Scrubber
	for _, sec := range secrets {
		s.add(sec)
	}
	// Longest first, so a shorter form never breaks up a longer one before it is found.
	slices.SortFunc(s.needles, func(a, b string) int { return len(b) - len(a) })
	return s
}

// With returns a Scrubber that also removes more secrets.
func (s Scrubber) With(secrets ...string) Scrubber {
	return New(append(slices.Clone(s.needles), secrets...)...)
}

// add records a secret in each encoding an echoing server could have used: as given,
// JSON-escaped (Go's HTML-safe escaping and the plain one, and escaped twice: an error quoting a
// JSON error), URL-escaped, base64 (standard and URL alphabets); a multi-line secret such as a
// PEM key also line by line, since a server may re-wrap or truncate it.
func (s *Scrubber) add(secret string) {
	secret = strings.TrimSpace(secret)
	if secret == "" {
		return
	}
	forms := []string{secret, url.QueryEscape(secret), url.PathEscape(secret),
		base64.StdEncoding.EncodeToString([]byte(secret)), base64.URLEncoding.EncodeToString([]byte(secret)),
		base64.RawStdEncoding.EncodeToString([]byte(secret))}
	once := jsonEscaped(secret, true)
	forms = append(forms, once, jsonEscaped(secret, false), jsonEscaped(once, true), jsonEscaped(once, false))
	if strings.Contains(secret, "\n") {
		for _, line := range strings.Split(secret, "\n") {
			line = strings.TrimSpace(line)
			if len(line) >= minLineSecret && !strings.HasPrefix(line, "-----") {
				forms = append(forms, line)
			}
		}
	}
	for _, f := range forms {
		if f != "" && !slices.Contains(s.needles, f) {
			s.needles = append(s.needles, f)
		}
	}
}

// jsonEscaped is s as it appears inside a JSON string.
func jsonEscaped(s string, escapeHTML bool) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(escapeHTML)
	_ = enc.Encode(s)
	return strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(b.String()), `"`), `"`)
}

// Clean returns text without any of the scrubber's secrets and without what Patterns finds.
func (s Scrubber) Clean(text string) string {
	for _, n := range s.needles {
		text = strings.ReplaceAll(text, n, Mark)
	}
	return Patterns(text)
}

// secretPatterns find secrets the scrubber was not told about: any PEM private key block (also
// JSON-escaped, with literal \n), the platform's own bearer and join tokens, DigitalOcean API tokens, and
// the value of a bearer Authorization header.
var secretPatterns = []*regexp.Regexp{
	regexp.MustCompile(`-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z0-9 ]*PRIVATE KEY-----`),
	regexp.MustCompile(`-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----[^"]*`),
	regexp.MustCompile(`\bbc[tj]_[A-Za-z0-9_-]{8,}`),
	regexp.MustCompile(`\bdo[opr]_v1_[A-Za-z0-9]{16,}`),
	regexp.MustCompile(`(?i)(\bbearer\s+)[A-Za-z0-9._~+/=-]{8,}`),
}

// Patterns removes the secrets secretPatterns find, whatever request caused the text.
func Patterns(text string) string {
	for i, p := range secretPatterns {
		if i == len(secretPatterns)-1 {
			text = p.ReplaceAllString(text, "${1}"+Mark)
			continue
		}
		text = p.ReplaceAllString(text, Mark)
	}
	return text
}
