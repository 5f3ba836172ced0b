package sdk

import (
	"context"
	"math/rand/v2"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"
)

// RetryPolicy says how a client retries calls that failed UNAVAILABLE (the platform could not be
// reached, or could not answer for now). Only calls that are safe to repeat are retried:
//   - reads (the methods marked NO_SIDE_EFFECTS: every get and list, and the event reads);
//   - creates that carry an idempotencyKey (the server answers a repeat with the first result).
//
// Every other mutation (update, delete, a create without a key, the metal verbs) is sent once:
// whether the first attempt took effect cannot be known from a failed connection. Neither the
// caller's own cancel or deadline nor any other error is retried.
type RetryPolicy struct {
	// MaxAttempts is how many times a call is sent at most, the first included; 0 means 4.
	MaxAttempts int
	// InitialBackoff is the pause before the second attempt, doubled for each further one, with
	// jitter (a random half to the whole of it); 0 means 100 ms.
	InitialBackoff time.Duration
	// MaxBackoff caps the pause; 0 means 2 s.
	MaxBackoff time.Duration
}

// WithRetry retries safe calls as p says (see RetryPolicy). Streams (WatchEvents) are not
// retried here: Watcher reconnects them from its cursor.
func WithRetry(p RetryPolicy) Option {
	if p.MaxAttempts <= 0 {
		p.MaxAttempts = 4
	}
	if p.InitialBackoff <= 0 {
		p.InitialBackoff = 100 * time.Millisecond
	}
	if p.MaxBackoff <= 0 {
		p.MaxBackoff = 2 * time.Second
	}
	return func(o *options) { o.retry = &p }
}

// WithTimeout gives every unary call whose context has no deadline one of d. A call it ends
// fails as the caller's own deadline (errors.Is(err, context.DeadlineExceeded)), never as a
// platform error. It bounds retries too. Streams are left alone: a watch runs until cancelled.
func WithTimeout(d time.Duration) Option { return func(o *options) { o.timeout = d } }

// retryInterceptor carries out a RetryPolicy.
type retryInterceptor struct{ p RetryPolicy }

// safeToRepeat: a read, or a create the server recognizes by its key.
func safeToRepeat(req connect.AnyRequest) bool {
	if req.Spec().IdempotencyLevel == connect.IdempotencyNoSideEffects {
		return true
	}
	if m, ok := req.Any().(proto.Message); ok {
		return stringField(m, "idempotency_key") != ""
	}
	return false
}

// transient: the error says the same call may succeed later, and the caller still waits.
func transient(ctx context.Context, err error) bool {
	if ctx.Err() != nil {
		return false
	}
	pe, ok := AsError(translate(ctx, err))
	return ok && pe.Code == Unavailable
}

// backoff is the jittered pause before attempt n (n >= 2).
func backoff(initial, maxB time.Duration, n int) time.Duration {
	d := initial
	for i := 2; i < n && d < maxB; i++ {
		d *= 2
	}
	d = min(d, maxB)
	return d/2 + rand.N(d/2+1)
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

func (r retryInterceptor) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		if !safeToRepeat(req) {
			return next(ctx, req)
		}
		for attempt := 1; ; attempt++ {
			resp, err := next(ctx, req)
			if err == nil || attempt >= r.p.MaxAttempts || !transient(ctx, err) {
				return resp, err
			}
			if !sleepCtx(ctx, backoff(r.p.InitialBackoff, r.p.MaxBackoff, attempt+1)) {
				return resp, err
			}
		}
	}
}

func (retryInterceptor) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return next
}

func (retryInterceptor) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return next
}

// timeoutInterceptor carries out WithTimeout.
type timeoutInterceptor time.Duration

func (t timeoutInterceptor) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		if _, ok := ctx.Deadline(); ok {
			return next(ctx, req)
		}
		ctx, cancel := context.WithTimeout(ctx, time.Duration(t))
		defer cancel()
		return next(ctx, req)
	}
}

func (timeoutInterceptor) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return next
}

func (timeoutInterceptor) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return next
}
