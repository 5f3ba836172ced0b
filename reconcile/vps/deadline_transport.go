package vps

import (
	"context"
	"fmt"
	"net/http"
	"time"
)

// DeadlineTransport returns base (a clone of http.DefaultTransport when nil) behind a check that refuses to
// send a request whose context deadline has passed by the clock, whether or not the context
// has noticed yet.
//
// Why it is needed: a context's deadline is enforced by a timer that cancels it from another
// goroutine. When a stopped process (SIGSTOP) resumes, every expired timer is due at once and
// the goroutine about to send a create may run before the one that cancels its context, so
// net/http still sees a live context and sends. managed.Loop's create window is only a fence if the
// clock is read right before the request leaves; give this transport to the provider client
// (digitalocean.Options.Transport), below its rate limiter, which may have slept.
func DeadlineTransport(base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = defaultTransport
	}
	return deadlineTransport{base: base}
}

// defaultTransport is one connection pool for every provider client built without a transport.
var defaultTransport http.RoundTripper = http.DefaultTransport.(*http.Transport).Clone()

type deadlineTransport struct{ base http.RoundTripper }

func (d deadlineTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if deadline, ok := req.Context().Deadline(); ok && !time.Now().Before(deadline) {
		if req.Body != nil {
			_ = req.Body.Close()
		}
		return nil, fmt.Errorf("vps: %s %s not sent: its deadline passed: %w", req.Method, req.URL.Path, context.DeadlineExceeded)
	}
	return d.base.RoundTrip(req)
}
