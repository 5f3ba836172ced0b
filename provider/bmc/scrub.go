package bmc

import (
	"regexp"
	"strings"

	"better-compute.dev/compute/redact"
	"better-compute.dev/compute/seal"
)

// maxAnswer bounds what a Report or an error keeps of a BMC's answer.
const maxAnswer = 512

// scrubber removes one target's credentials from text: the password in every encoding a driver
// or a BMC might echo it (package redact: JSON-escaped, URL-escaped, base64, inside basic auth),
// and any session token that follows a token header name.
type scrubber struct{ r redact.Scrubber }

var tokenPattern = regexp.MustCompile(`(?i)(x-auth-token|authorization|token|session)(["']?\s*[:=]\s*["']?)([^\s"',;}]+)`)

func newScrubber(user string, pass seal.Secret) scrubber {
	p := pass.Reveal()
	if p == "" {
		return scrubber{}
	}
	// "user:password" covers basic auth, whose header carries it base64-encoded.
	return scrubber{r: redact.New(p, user+":"+p)}
}

// clean returns text without credentials, on one line, bounded in length.
func (s scrubber) clean(text string) string {
	text = s.r.Clean(text)
	text = tokenPattern.ReplaceAllString(text, "${1}${2}"+seal.Redacted)
	text = strings.Join(strings.Fields(text), " ")
	if len(text) > maxAnswer {
		text = strings.ToValidUTF8(text[:maxAnswer], "") + "..."
	}
	return text
}
