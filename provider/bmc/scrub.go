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
// and any session token given as a header, a JSON member or a query parameter. It scrubs values,
// never words: "session: exit status 1" (ipmitool's "Unable to establish ... session" and its
// exit status) keeps every word.
type scrubber struct{ r redact.Scrubber }

var tokenPatterns = []struct {
	re   *regexp.Regexp
	keep string
}{
	// A header: "X-Auth-Token: abc", "Authorization: Basic abc".
	{regexp.MustCompile(`(?i)\b(x-auth-token|authorization)(["']?\s*[:=]\s*["']?)((?:basic|bearer)\s+)?([^\s"',;}]+)`), "${1}${2}${3}"},
	// A JSON member: "token": "abc", "SessionToken":"abc".
	{regexp.MustCompile(`(?i)(["'](?:x-auth-token|[a-z_-]*token|session[_-]?(?:id|key)|sessionid)["']\s*:\s*["']?)([^\s"',;}]+)`), "${1}"},
	// A parameter: token=abc, session_id=abc.
	{regexp.MustCompile(`(?i)\b((?:[a-z_-]*token|session[_-]?(?:id|key))=)([^\s"',;}&]+)`), "${1}"},
}

// goType finds a Go type name a driver put into its message ("*ipmitool.Conn"): it means
// nothing to a tenant and is replaced by what it stands for.
var (
	notImplemented = regexp.MustCompile(`not an? [A-Z][A-Za-z0-9]* implementation(: \*?[A-Za-z0-9_.]+)?`)
	goType         = regexp.MustCompile(`\*[a-z][a-z0-9_]*\.[A-Z][A-Za-z0-9_]*\b`)
)

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
	for _, p := range tokenPatterns {
		text = p.re.ReplaceAllString(text, p.keep+seal.Redacted)
	}
	text = notImplemented.ReplaceAllString(text, "not supported by the driver")
	text = goType.ReplaceAllString(text, "the driver")
	text = strings.Join(strings.Fields(text), " ")
	if len(text) > maxAnswer {
		text = strings.ToValidUTF8(text[:maxAnswer], "") + "..."
	}
	return text
}
