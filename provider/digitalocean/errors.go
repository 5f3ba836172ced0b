package digitalocean

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/digitalocean/godo"

	"better-compute.dev/compute/provider"
	"better-compute.dev/compute/redact"
)

// callError is what every method returns on failure: a message built here (and scrubbed of
// the token) that wraps the provider sentinel and the underlying cause for errors.Is/As.
type callError struct {
	msg  string
	errs []error
}

func (e *callError) Error() string   { return e.msg }
func (e *callError) Unwrap() []error { return e.errs }

// fail maps an error from godo to the provider's vocabulary, in one place:
//
//	404                         -> provider.ErrNotFound
//	400, 401, 422, other 4xx    -> provider.ErrInvalid (the same request cannot succeed)
//	403 "previous actions", 409 -> provider.ErrBusy (retry once the resource settles)
//	422 "resized once per hour" -> provider.ErrTooSoon (retry once a size change is allowed)
//	other 403                   -> provider.ErrInvalid
//	429, client-side limit      -> *provider.RateLimitedError
//	408, 5xx, network, timeout  -> provider.ErrTransient
//
// secrets are the secret values the failed request carried (a certificate's private key): a
// server that echoes its request in the error message must not put them into lastError.
func (p *client) fail(op string, err error, secrets ...string) error {
	if err == nil {
		return nil
	}
	scrub := p.scrub.With(secrets...)
	var resp *godo.ErrorResponse
	var limited *provider.RateLimitedError
	switch {
	case errors.As(err, &resp) && resp.Response != nil:
		return failResponse(scrub, op, resp)
	case errors.As(err, &limited):
		return wrapWith(scrub, fmt.Sprintf("digitalocean: %s: client-side rate limit: %s", op, limited.Error()), limited, err)
	default:
		return wrapWith(scrub, fmt.Sprintf("digitalocean: %s: %v: %s", op, err, provider.ErrTransient.Error()), provider.ErrTransient, err)
	}
}

func failResponse(scrub redact.Scrubber, op string, resp *godo.ErrorResponse) error {
	status := resp.Response.StatusCode
	message := resp.Message
	if message == "" {
		message = http.StatusText(status)
	}
	var kind error
	switch {
	case status == http.StatusNotFound:
		kind = provider.ErrNotFound
	case status == http.StatusTooManyRequests:
		kind = &provider.RateLimitedError{RetryAfter: retryAfter(resp.Response.Header, time.Now())}
	case status == http.StatusRequestTimeout || status >= 500:
		kind = provider.ErrTransient
	case status == http.StatusConflict:
		kind = provider.ErrBusy
	case status == http.StatusForbidden && strings.Contains(strings.ToLower(message), "previous actions"):
		kind = provider.ErrBusy
	case status == http.StatusUnprocessableEntity && resizeTooSoon(message):
		// The request is right but early: the same PUT succeeds once the provider allows the
		// next size change.
		kind = provider.ErrTooSoon
	default:
		kind = provider.ErrInvalid
	}
	text := fmt.Sprintf("digitalocean: %s: %d %s", op, status, message)
	if resp.RequestID != "" {
		text += " (request " + resp.RequestID + ")"
	}
	return wrapWith(scrub, text+": "+kind.Error(), kind, resp)
}

// invalid reports a request refused before it was sent (a malformed id or spec).
func (p *client) invalid(op, format string, args ...any) error {
	return p.wrap(fmt.Sprintf("digitalocean: %s: %s: %s", op, fmt.Sprintf(format, args...), provider.ErrInvalid.Error()), provider.ErrInvalid)
}

// wrap builds a callError whose text never carries the token, whatever a server echoed.
func (p *client) wrap(text string, errs ...error) error {
	return wrapWith(p.scrub, text, errs...)
}

// wrapWith builds a callError whose text is scrubbed of the request's secrets. The wrapped
// errors keep the provider sentinels for errors.Is; their own text is never shown, since
// callError.Error is the scrubbed message alone.
func wrapWith(scrub redact.Scrubber, text string, errs ...error) error {
	return &callError{msg: scrub.Clean(text), errs: errs}
}

// validID rejects ids that would change the request path.
func validID(id string) bool {
	return id != "" && !strings.ContainsAny(id, "/?#% ")
}

// resizeTooSoon reports DigitalOcean's refusal of a size_unit change made within an hour of the
// previous one.
func resizeTooSoon(message string) bool {
	m := strings.ToLower(message)
	return strings.Contains(m, "resized") && strings.Contains(m, "once per hour")
}
