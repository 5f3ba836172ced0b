package bmc

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"syscall"

	gfcommon "github.com/stmcginnis/gofish/common"

	"better-compute.dev/compute/provider"
)

// Kinds of failure, wrapped by every *Error so callers branch with errors.Is. Each *Error also
// wraps provider.ErrTransient (retryable) or provider.ErrInvalid (permanent), so
// provider.Retryable works on it.
var (
	ErrAuth         = errors.New("bmc: credentials refused")     // 401/403, bad IPMI user or password
	ErrUnreachable  = errors.New("bmc: unreachable")             // connection refused/reset, no route, DNS
	ErrTimeout      = errors.New("bmc: timed out")               // deadline, I/O timeout, cancelled
	ErrBMCFailure   = errors.New("bmc: internal error")          // 5xx
	ErrBusy         = errors.New("bmc: busy")                    // 409, 412, 429, a power transition in progress
	ErrUnsupported  = errors.New("bmc: not supported")           // 400/404/405/501, no driver
	ErrPowerUnknown = errors.New("bmc: power state unknown")     // never power on or cycle then
	ErrTLS          = errors.New("bmc: certificate not trusted") // verification failed
	ErrUnclassified = errors.New("bmc: failure not understood")  // permanent, so it surfaces
	ErrNotSettled   = errors.New("bmc: power did not settle")    // the reading never showed the change
)

// Error is a failed step. Its message has been scrubbed of the target's password (and of
// session tokens) and never wraps the raw driver error, which may hold them.
type Error struct {
	Step      Step
	Kind      error // one of the Err* kinds above
	Retryable bool
	msg       string
}

// Error returns the step and the scrubbed message.
func (e *Error) Error() string { return "bmc: " + string(e.Step) + ": " + e.msg }

// Unwrap exposes the kind and the provider-level class, never the raw error.
func (e *Error) Unwrap() []error {
	class := provider.ErrInvalid
	if e.Retryable {
		class = provider.ErrTransient
	}
	return []error{e.Kind, class}
}

// Retryable reports whether err (from Run) is worth retrying later with backoff.
func Retryable(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Retryable
}

var retryableKinds = map[error]bool{ErrUnreachable: true, ErrTimeout: true, ErrBMCFailure: true, ErrBusy: true, ErrStopped: true}

// newError classifies raw and builds a scrubbed *Error.
func newError(step Step, raw error, s scrubber) *Error {
	kind := classify(raw)
	return &Error{Step: step, Kind: kind, Retryable: retryableKinds[kind], msg: s.clean(foreignSafe(raw))}
}

// statusPattern finds an HTTP status in a driver's message ("401: {...}" from gofish).
var statusPattern = regexp.MustCompile(`(?:^|[^0-9])([45][0-9][0-9]): `)

// classify decides the kind of a driver error: typed errors first (gofish's HTTP error, net
// and TLS errors, contexts), then the texts drivers are known to produce (ipmitool's output
// arrives as text only).
func classify(err error) error {
	var ce *gfcommon.CollectionError
	if errors.As(err, &ce) && !ce.Empty() {
		// A collection read that failed on some members: the first member's failure (by link)
		// is the kind; gofish keeps each member's error typed.
		links := make([]string, 0, len(ce.Failures))
		for l := range ce.Failures {
			links = append(links, l)
		}
		slices.Sort(links)
		return classify(ce.Failures[links[0]])
	}
	var ge *gfcommon.Error
	if errors.As(err, &ge) && ge.HTTPReturnedStatusCode != 0 {
		return kindOfStatus(ge.HTTPReturnedStatusCode)
	}
	var uae x509.UnknownAuthorityError
	var hne x509.HostnameError
	var cie x509.CertificateInvalidError
	var cve *tls.CertificateVerificationError
	switch {
	case errors.As(err, &uae), errors.As(err, &hne), errors.As(err, &cie), errors.As(err, &cve):
		return ErrTLS
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled), errors.Is(err, syscall.ETIMEDOUT):
		return ErrTimeout
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return ErrUnreachable
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return ErrTimeout
	}
	// A connection that failed or broke before an answer, whatever the driver wrapped around it
	// ("no Opener implementations found" from bmclib's login among them): the BMC is not
	// reachable now, and a later attempt may find it.
	var dnsErr *net.DNSError
	var opErr *net.OpError
	var urlErr *url.Error
	var errno syscall.Errno
	if errors.As(err, &dnsErr) || errors.As(err, &opErr) || errors.As(err, &urlErr) || errors.As(err, &errno) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) {
		return ErrUnreachable
	}
	return classifyText(strings.ToLower(err.Error()))
}

func classifyText(msg string) error {
	if m := statusPattern.FindStringSubmatch(msg); m != nil {
		return kindOfStatus(int(m[1][0]-'0')*100 + int(m[1][1]-'0')*10 + int(m[1][2]-'0'))
	}
	has := func(subs ...string) bool {
		for _, s := range subs {
			if strings.Contains(msg, s) {
				return true
			}
		}
		return false
	}
	switch {
	case has("certificate signed by unknown authority", "x509:", "tls: failed to verify"):
		return ErrTLS
	case has("no response"):
		// ipmitool: "no response from RAKP 1 message" is a BMC that did not answer, so it
		// must be tested before the RAKP texts of a refused password.
		return ErrTimeout
	case has("unauthorized", "authentication failed", "invalid user name", "rakp", "password invalid",
		"unable to establish ipmi v2 / rmcp+ session"):
		// ipmitool says "Unable to establish IPMI v2 / RMCP+ session" for a wrong password;
		// an unreachable BMC gives "no response" text, handled below.
		return ErrAuth
	case has("timeout", "timed out", "deadline exceeded"):
		return ErrTimeout
	case has("connection refused", "connection reset", "no route to host", "no such host", "network is unreachable"):
		return ErrUnreachable
	case has("not supported", "unsupported", "implementations found", "not implemented", "unknown power action", "invalid boot device"):
		return ErrUnsupported
	}
	return ErrUnclassified
}

func kindOfStatus(code int) error {
	switch {
	case code == 401 || code == 403:
		return ErrAuth
	case code == 409 || code == 412 || code == 429 || code == 503:
		return ErrBusy
	case code == 400 || code == 404 || code == 405 || code == 501 || code == 422:
		return ErrUnsupported
	case code >= 500:
		return ErrBMCFailure
	}
	return ErrUnclassified
}
