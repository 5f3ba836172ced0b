package reconcile_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"better-compute.dev/compute/provider"
	"better-compute.dev/compute/provider/bmc"
	"better-compute.dev/compute/reconcile"
)

// TestProviderErrorsAsTheRunnerSeesThem: the runner, which imports no provider, retries a
// provider's errors as provider.Retryable says (quietly when retryable, with the message shown
// otherwise) and a rate limit at the time it names.
func TestProviderErrorsAsTheRunnerSeesThem(t *testing.T) {
	until := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	limited := &provider.RateLimitedError{RetryAfter: until}
	cases := []struct {
		name    string
		err     error
		retryAt time.Time // zero: the error names no time
	}{
		{"rate limited", limited, until},
		{"rate limited, wrapped", fmt.Errorf("create load balancer: %w", limited), until},
		{"busy", provider.ErrBusy, time.Time{}},
		{"transient, wrapped", fmt.Errorf("get load balancer: %w", provider.ErrTransient), time.Time{}},
		{"deferred, wrapped", fmt.Errorf("status poll: %w", provider.ErrDeferred), time.Time{}},
		{"transient, joined", errors.Join(errors.New("dial"), provider.ErrTransient), time.Time{}},
		{"bmc timeout", &bmc.Error{Kind: bmc.ErrTimeout, Retryable: true}, time.Time{}},
		{"bmc credentials refused", &bmc.Error{Kind: bmc.ErrAuth}, time.Time{}},
		{"invalid", fmt.Errorf("create: %w", provider.ErrInvalid), time.Time{}},
		{"not found", provider.ErrNotFound, time.Time{}},
		{"a handler's own error", errors.New("no such pool"), time.Time{}},
		{"cancelled", context.Canceled, time.Time{}},
		{"nil", nil, time.Time{}},
	}
	retryable := 0
	for _, c := range cases {
		if got, want := reconcile.Transient(c.err), provider.Retryable(c.err); got != want {
			t.Errorf("%s: reconcile.Transient = %v, provider.Retryable = %v", c.name, got, want)
		}
		if provider.Retryable(c.err) {
			retryable++
		}
		var at reconcile.RetryAtError
		found := errors.As(c.err, &at)
		if found != !c.retryAt.IsZero() || found && !at.RetryAt().Equal(c.retryAt) {
			t.Errorf("%s: RetryAtError found %v, want a time %v", c.name, found, c.retryAt)
		}
	}
	if retryable != 7 {
		t.Errorf("%d of the cases are retryable, want 7: the table no longer tells both kinds apart", retryable)
	}
}
