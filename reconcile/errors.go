package reconcile

import "time"

// The runner knows no provider: a handler's error tells it how to retry through the methods
// below, which a provider's errors have (provider.RateLimitedError, ErrBusy, ErrTransient,
// ErrDeferred and the errors wrapping them) and a handler's own errors may have.

// RetryAtError is an error that says when its work can run again, as a rate limit says when
// the request budget returns. The runner retries the item then.
type RetryAtError interface {
	error
	RetryAt() time.Time
}

// TransientError is an error expected to pass on its own: the resource is busy, the provider
// answered 5xx or timed out, a poll was deferred while the request budget is short. The runner
// retries it with backoff and does not record its message as the resource's last error; any
// other error is retried with backoff too, its message recorded.
type TransientError interface {
	error
	Transient() bool
}

// Transient reports whether err, or an error it wraps, is a TransientError saying so.
func Transient(err error) bool {
	if err == nil {
		return false
	}
	if t, ok := err.(TransientError); ok && t.Transient() {
		return true
	}
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		return Transient(u.Unwrap())
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			if Transient(e) {
				return true
			}
		}
	}
	return false
}
