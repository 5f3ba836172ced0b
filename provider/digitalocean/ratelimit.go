package digitalocean

import (
	"context"
	"crypto/sha256"
	"net/http"
	"strconv"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"better-compute.dev/compute/provider"
)

// Limiters holds one rate limiter per API token. Keys are SHA-256 digests, so the registry
// never holds a token itself.
type Limiters struct {
	mu sync.Mutex
	m  map[[sha256.Size]byte]*tokenLimiter
}

// NewLimiters returns an empty registry (tests use one each so budgets do not leak between them).
func NewLimiters() *Limiters {
	return &Limiters{m: map[[sha256.Size]byte]*tokenLimiter{}}
}

var defaultLimiters = NewLimiters()

// forToken returns the token's limiter, creating it with the given budget on first use (later
// callers share the first budget: one token has one budget at the provider).
func (l *Limiters) forToken(token string, perMinute, burst int) *tokenLimiter {
	key := sha256.Sum256([]byte(token))
	l.mu.Lock()
	defer l.mu.Unlock()
	if t := l.m[key]; t != nil {
		return t
	}
	t := newTokenLimiter(perMinute, burst)
	l.m[key] = t
	return t
}

// tokenLimiter combines a token bucket sized so that no rolling minute sees more than
// perMinute requests, with a gate closed until the time the provider names when it reports the
// budget spent (remaining 0, or a 429).
type tokenLimiter struct {
	bucket *rate.Limiter

	mu           sync.Mutex
	blockedUntil time.Time
}

// newTokenLimiter: a bucket of burst b refilled at r per second lets at most b + 60r requests
// through in any minute, so r = (perMinute - b) / 60.
func newTokenLimiter(perMinute, burst int) *tokenLimiter {
	if burst >= perMinute {
		burst = max(perMinute/4, 1)
	}
	perSecond := float64(perMinute-burst) / 60
	return &tokenLimiter{bucket: rate.NewLimiter(rate.Limit(perSecond), burst)}
}

// wait blocks until a request may go out. A wait longer than maxWait, or one that would end
// past ctx's deadline, returns a *provider.RateLimitedError at once instead: calls are meant to
// be non-blocking, and the reconciler reschedules.
func (l *tokenLimiter) wait(ctx context.Context, maxWait time.Duration) error {
	now := time.Now()
	l.mu.Lock()
	until := l.blockedUntil
	l.mu.Unlock()
	if d := until.Sub(now); d > 0 {
		if !mayWait(ctx, now, d, maxWait) {
			return &provider.RateLimitedError{RetryAfter: until}
		}
		if err := sleep(ctx, d); err != nil {
			return err
		}
		now = time.Now()
	}
	res := l.bucket.ReserveN(now, 1)
	d := res.DelayFrom(now)
	if d == 0 {
		return nil
	}
	if !mayWait(ctx, now, d, maxWait) {
		res.CancelAt(now)
		return &provider.RateLimitedError{RetryAfter: now.Add(d)}
	}
	if err := sleep(ctx, d); err != nil {
		res.Cancel()
		return err
	}
	return nil
}

func mayWait(ctx context.Context, now time.Time, d, maxWait time.Duration) bool {
	if maxWait < 0 || d > maxWait {
		return false
	}
	deadline, has := ctx.Deadline()
	return !has || now.Add(d).Before(deadline)
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// observe closes the gate when an answer says the budget is spent.
func (l *tokenLimiter) observe(resp *http.Response, now time.Time) {
	var until time.Time
	switch {
	case resp.StatusCode == http.StatusTooManyRequests:
		until = retryAfter(resp.Header, now)
	case resp.Header.Get("ratelimit-remaining") == "0":
		until = resetTime(resp.Header)
	}
	if !until.After(now) {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if until.After(l.blockedUntil) {
		l.blockedUntil = until
	}
}

// retryAfter is when a 429 says to come back: retry-after (seconds or an HTTP date), else
// ratelimit-reset, else a minute (the rolling window DigitalOcean enforces first).
func retryAfter(h http.Header, now time.Time) time.Time {
	if v := h.Get("retry-after"); v != "" {
		if secs, err := strconv.Atoi(v); err == nil && secs >= 0 {
			return now.Add(time.Duration(secs) * time.Second)
		}
		if t, err := http.ParseTime(v); err == nil {
			return t
		}
	}
	if t := resetTime(h); t.After(now) {
		return t
	}
	return now.Add(time.Minute)
}

// resetTime reads ratelimit-reset (Unix seconds), as godo's populateRate does.
func resetTime(h http.Header) time.Time {
	v, err := strconv.ParseInt(h.Get("ratelimit-reset"), 10, 64)
	if err != nil || v <= 0 {
		return time.Time{}
	}
	return time.Unix(v, 0)
}

// limitedTransport applies the token's limiter to every request and feeds it every answer.
type limitedTransport struct {
	base    http.RoundTripper
	limiter *tokenLimiter
	maxWait time.Duration
}

func (t *limitedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if err := t.limiter.wait(req.Context(), t.maxWait); err != nil {
		if req.Body != nil {
			_ = req.Body.Close()
		}
		return nil, err
	}
	resp, err := t.base.RoundTrip(req)
	if err == nil {
		t.limiter.observe(resp, time.Now())
	}
	return resp, err
}
