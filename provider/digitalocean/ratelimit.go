package digitalocean

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"better-compute.dev/compute/observe"
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
// callers share the first budget: one token has one budget at the provider). With a shared
// budget the bucket lives in the database and every replica draws on it.
func (l *Limiters) forToken(token string, perMinute, burst int, shared SharedBudget) *tokenLimiter {
	key := sha256.Sum256([]byte(token))
	l.mu.Lock()
	defer l.mu.Unlock()
	if t := l.m[key]; t != nil {
		return t
	}
	t := newTokenLimiter(perMinute, burst)
	if shared != nil {
		t.shared = newSharedBucket(shared, hex.EncodeToString(key[:]), perMinute, burst)
	}
	l.m[key] = t
	return t
}

// SharedBudget is a token bucket kept where every replica sees it (the database: see
// store.DB.TakeBudget), keyed by the SHA-256 of the API token in hex.
type SharedBudget interface {
	// Take refills the key's bucket (capacity, perSecond) and grants up to want requests,
	// leaving at least reserve in it; it reports what is left and until when the provider
	// said the budget is spent.
	Take(ctx context.Context, key string, capacity, perSecond float64, want int, reserve float64) (granted int, left float64, blockedUntil time.Time, err error)
	// Block records that the provider refuses the key's requests until until.
	Block(ctx context.Context, key string, until time.Time) error
}

// pollReserve is the share of the burst a low-priority request (a status poll) leaves in the
// bucket: polls go out only while nothing else is waiting for the budget, which keeps it
// nearly full; while creates wait it stays near empty and polls are deferred.
const pollReserve = 0.8

// leaseTTL bounds how long leased requests stay usable: a process that leased more than it
// sent lets the rest lapse, so leases never add up to more than the bucket allows in a window.
const leaseTTL = time.Second

// sharedBucket leases requests from a SharedBudget in small batches (one database round trip
// serves several requests) and hands them out in this process.
type sharedBucket struct {
	budget    SharedBudget
	key       string
	capacity  float64
	perSecond float64
	batch     int
	reserve   float64

	mu        sync.Mutex
	held      int
	heldUntil time.Time
	waiting   int
}

func newSharedBucket(b SharedBudget, key string, perMinute, burst int) *sharedBucket {
	if burst >= perMinute {
		burst = max(perMinute/4, 1)
	}
	return &sharedBucket{budget: b, key: key, capacity: float64(burst), perSecond: float64(perMinute-burst) / 60,
		batch: min(max(perMinute/600, 1), 10), reserve: pollReserve * float64(burst)}
}

// take waits for one request from the shared bucket. A low-priority caller asks for one and
// leaves the reserve, and is told ErrDeferred at once instead of waiting.
func (s *sharedBucket) take(ctx context.Context, low bool, maxWait time.Duration) error {
	for {
		now := time.Now()
		s.mu.Lock()
		if s.held > 0 && now.Before(s.heldUntil) {
			s.held--
			s.mu.Unlock()
			return nil
		}
		s.held = 0
		s.waiting++
		want := min(s.waiting, s.batch)
		s.mu.Unlock()
		reserve := 0.0
		if low {
			want, reserve = 1, s.reserve
		}
		granted, left, blocked, err := s.budget.Take(ctx, s.key, s.capacity, s.perSecond, want, reserve)
		s.mu.Lock()
		s.waiting--
		if err == nil && granted > 0 {
			s.held += granted - 1
			s.heldUntil = now.Add(leaseTTL)
		}
		s.mu.Unlock()
		switch {
		case err != nil:
			return fmt.Errorf("digitalocean: shared request budget: %w", errors.Join(provider.ErrTransient, err))
		case granted > 0:
			return nil
		case low:
			return fmt.Errorf("digitalocean: status poll: %w", provider.ErrDeferred)
		}
		need := 1 - left
		until := now.Add(time.Duration(need / s.perSecond * float64(time.Second)))
		if blocked.After(until) {
			until = blocked
		}
		d := max(until.Sub(now), time.Millisecond)
		if !mayWait(ctx, now, d, maxWait) {
			return &provider.RateLimitedError{RetryAfter: now.Add(d)}
		}
		if err := sleep(ctx, d); err != nil {
			return err
		}
	}
}

// tokenLimiter combines a token bucket sized so that no rolling minute sees more than
// perMinute requests, with a gate closed until the time the provider names when it reports the
// budget spent (remaining 0, or a 429).
type tokenLimiter struct {
	bucket *rate.Limiter
	shared *sharedBucket // when set, the bucket is in the database and bucket is unused

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
	low := provider.LowPriority(ctx)
	if d := until.Sub(now); d > 0 {
		if low {
			return fmt.Errorf("digitalocean: status poll: %w", provider.ErrDeferred)
		}
		if !mayWait(ctx, now, d, maxWait) {
			return &provider.RateLimitedError{RetryAfter: until}
		}
		if err := sleep(ctx, d); err != nil {
			return err
		}
		now = time.Now()
	}
	if l.shared != nil {
		return l.shared.take(ctx, low, maxWait)
	}
	if low {
		// A poll goes out only while the bucket holds the reserve beyond it.
		if l.bucket.TokensAt(now) < 1+pollReserve*float64(l.bucket.Burst()) || !l.bucket.AllowN(now, 1) {
			return fmt.Errorf("digitalocean: status poll: %w", provider.ErrDeferred)
		}
		return nil
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
	later := until.After(l.blockedUntil)
	if later {
		l.blockedUntil = until
	}
	l.mu.Unlock()
	if later && l.shared != nil {
		// Tell the other replicas; failing to is not worse than a per-process gate.
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_ = l.shared.budget.Block(ctx, l.shared.key, until)
		cancel()
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
	start := time.Now()
	err := t.limiter.wait(req.Context(), t.maxWait)
	observe.RateLimited(Kind, rateOutcome(err), time.Since(start))
	if err != nil {
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

// rateOutcome names a limiter pass for bc_provider_ratelimit_waits_total.
func rateOutcome(err error) string {
	var limited *provider.RateLimitedError
	switch {
	case err == nil:
		return observe.RateSent
	case errors.As(err, &limited):
		return observe.RateRefused
	case errors.Is(err, provider.ErrDeferred):
		return observe.RateDeferred
	}
	return observe.RateError
}
