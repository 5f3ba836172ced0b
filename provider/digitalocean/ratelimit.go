package digitalocean

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strconv"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"better-compute.dev/compute/observe"
	"better-compute.dev/compute/provider"
)

// Limiters holds one rate limiter per API token and shared budget. Keys are SHA-256 digests,
// so the registry never holds a token itself.
type Limiters struct {
	mu sync.Mutex
	m  map[limiterKey]*tokenLimiter
}

// limiterKey names a limiter: the token's digest and where its bucket is kept. A process has
// one database, so in service this is one limiter per token; a process that opens several
// (tests, one database each) must not hand a provider of the second a limiter whose bucket is
// in the first, which may be closed by then.
type limiterKey struct {
	token  [sha256.Size]byte
	shared SharedBudget // nil: per process; otherwise comparable (see forToken)
}

// NewLimiters returns an empty registry (tests use one each so budgets do not leak between them).
func NewLimiters() *Limiters {
	return &Limiters{m: map[limiterKey]*tokenLimiter{}}
}

var defaultLimiters = NewLimiters()

// forToken returns the limiter of the token and shared budget, creating it with the given rate
// on first use (later callers with the same budget share the first one's rate: one token has
// one budget at the provider). With a shared budget the bucket lives in the database and every
// replica draws on it.
func (l *Limiters) forToken(token string, perMinute, burst int, shared SharedBudget) *tokenLimiter {
	key := limiterKey{token: sha256.Sum256([]byte(token)), shared: shared}
	if shared != nil && !reflect.TypeOf(shared).Comparable() {
		// A budget that cannot be a map key (a struct holding a slice or map) is told apart by
		// nothing: every such budget of the token shares the first one's limiter.
		key.shared = nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if t := l.m[key]; t != nil {
		return t
	}
	t := newTokenLimiter(perMinute, burst)
	if shared != nil {
		t.shared = newSharedBucket(shared, hex.EncodeToString(key.token[:]), perMinute, burst)
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

// pollShare is the share of the request rate status polls may still take while creates wait
// for the budget (the first page of a list, and the pages that follow it). Without it a long
// run of creates would defer every poll, and everything created would be observed ready only
// after the last create; with it the reconciler keeps recording what is ready as it goes.
const pollShare = 0.05

// sharedBucket leases requests from a SharedBudget for this process: one lease in flight at a
// time asks for as many requests as wait here (up to batch) and hands them out in arrival
// order, so a lease is one database round trip for several requests and nothing leased lapses
// unused.
type sharedBucket struct {
	budget    SharedBudget
	key       string
	capacity  float64
	perSecond float64
	batch     int
	reserve   float64

	mu      sync.Mutex
	queue   []*bucketWaiter // normal-priority requests waiting, oldest first
	leasing bool            // the lease loop runs
	short   bool            // the last lease left the bucket without a request to spare
}

type bucketWaiter struct {
	done chan error // receives the outcome once
	gone bool       // the caller stopped waiting
}

func newSharedBucket(b SharedBudget, key string, perMinute, burst int) *sharedBucket {
	if burst >= perMinute {
		burst = max(perMinute/4, 1)
	}
	return &sharedBucket{budget: b, key: key, capacity: float64(burst), perSecond: float64(perMinute-burst) / 60,
		batch: min(max(perMinute/600, 1), 10), reserve: pollReserve * float64(burst)}
}

// busy reports whether requests wait here for the budget (so a poll should not go first).
func (s *sharedBucket) busy() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.queue) > 0 || s.short
}

// poll asks for one low-priority request, leaving the reserve in the bucket; false means the
// budget has no room to spare.
func (s *sharedBucket) poll(ctx context.Context) (bool, error) {
	granted, _, _, err := s.budget.Take(ctx, s.key, s.capacity, s.perSecond, 1, s.reserve)
	if err != nil {
		return false, fmt.Errorf("digitalocean: shared request budget: %w", errors.Join(provider.ErrTransient, err))
	}
	return granted > 0, nil
}

// take waits for one request from the shared bucket, in arrival order with the other waiters
// of this process (first: before them). A wait that would outlast maxWait or ctx's deadline is
// refused at once.
func (s *sharedBucket) take(ctx context.Context, maxWait time.Duration, first bool) error {
	now := time.Now()
	s.mu.Lock()
	ahead := len(s.queue)
	if first {
		ahead = 0
	}
	if ahead > 0 {
		d := time.Duration(float64(ahead) / s.perSecond * float64(time.Second))
		if !mayWait(ctx, now, d, maxWait) {
			s.mu.Unlock()
			return &provider.RateLimitedError{RetryAfter: now.Add(d)}
		}
	}
	w := &bucketWaiter{done: make(chan error, 1)}
	if first {
		// A list the poll credit paid for is read before the creates waiting here: its pages
		// then show one moment, so it speaks for every row written before it began.
		s.queue = append([]*bucketWaiter{w}, s.queue...)
	} else {
		s.queue = append(s.queue, w)
	}
	if !s.leasing {
		s.leasing = true
		go s.lease(maxWait)
	}
	s.mu.Unlock()
	select {
	case err := <-w.done:
		return err
	case <-ctx.Done():
		s.mu.Lock()
		w.gone = true
		s.mu.Unlock()
		select {
		case err := <-w.done:
			if err == nil {
				// Granted just as the caller left: the request is not sent (a lapse of one).
				return ctx.Err()
			}
		default:
		}
		return ctx.Err()
	}
}

// lease runs while requests wait: it leases up to batch of them at a time and hands them out,
// sleeping until the bucket refills when it is short.
func (s *sharedBucket) lease(maxWait time.Duration) {
	for {
		s.mu.Lock()
		live := s.queue[:0]
		for _, w := range s.queue {
			if !w.gone {
				live = append(live, w)
			}
		}
		s.queue = live
		if len(s.queue) == 0 {
			s.leasing, s.short = false, false
			s.mu.Unlock()
			return
		}
		want := min(len(s.queue), s.batch)
		s.mu.Unlock()

		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		granted, left, blocked, err := s.budget.Take(ctx, s.key, s.capacity, s.perSecond, want, 0)
		cancel()
		now := time.Now()

		s.mu.Lock()
		if err != nil {
			err = fmt.Errorf("digitalocean: shared request budget: %w", errors.Join(provider.ErrTransient, err))
			for _, w := range s.queue {
				w.done <- err
			}
			s.queue, s.leasing, s.short = nil, false, false
			s.mu.Unlock()
			return
		}
		got := granted
		for granted > 0 && len(s.queue) > 0 {
			w := s.queue[0]
			s.queue = s.queue[1:]
			if !w.gone {
				w.done <- nil
				granted--
			}
		}
		s.short = left < 1 || got == 0
		if !s.short || len(s.queue) == 0 {
			s.mu.Unlock()
			continue
		}
		until := now.Add(time.Duration(max(1-left, 0) / s.perSecond * float64(time.Second)))
		if blocked.After(until) {
			until = blocked
		}
		d := max(until.Sub(now), time.Millisecond)
		if maxWait >= 0 && d > maxWait {
			// The provider said the budget is spent for longer than a call may wait.
			rl := &provider.RateLimitedError{RetryAfter: until}
			for _, w := range s.queue {
				w.done <- rl
			}
			s.queue, s.leasing, s.short = nil, false, false
			s.mu.Unlock()
			return
		}
		s.mu.Unlock()
		time.Sleep(d)
	}
}

// tokenLimiter combines a token bucket sized so that no rolling minute sees more than
// perMinute requests, with a gate closed until the time the provider names when it reports the
// budget spent (remaining 0, or a 429).
type tokenLimiter struct {
	bucket *rate.Limiter
	shared *sharedBucket // when set, the bucket is in the database and bucket is unused
	// credit meters the polls let through while the budget is short (pollShare of the rate),
	// per process; with a shared budget it is kept in the database beside the bucket.
	credit *rate.Limiter

	mu           sync.Mutex
	blockedUntil time.Time
	pages        int // the pages of the last (or current) list that began as a poll
}

// maxCreditPages bounds what one list is charged to the poll credit.
const maxCreditPages = 20

// pollCredit charges a list that begins while the budget is short to the polls' share of the
// rate: the whole list (as many pages as the last one had) at once, or nothing.
func (l *tokenLimiter) pollCredit(ctx context.Context, now time.Time) (bool, error) {
	l.mu.Lock()
	pages := min(max(l.pages, 1), maxCreditPages)
	l.mu.Unlock()
	if l.shared == nil {
		return l.credit.AllowN(now, pages), nil
	}
	s := l.shared
	key, c, r := "polls-"+s.key, float64(pages), pollShare*s.perSecond
	// Granted only while the credit holds every page (one is taken), then the rest is taken.
	granted, _, _, err := s.budget.Take(ctx, key, c, r, 1, c-1)
	if err == nil && granted > 0 && pages > 1 {
		_, _, _, err = s.budget.Take(ctx, key, c, r, pages-1, 0)
	}
	if err != nil {
		return false, fmt.Errorf("digitalocean: shared request budget: %w", errors.Join(provider.ErrTransient, err))
	}
	return granted > 0, nil
}

// newTokenLimiter: a bucket of burst b refilled at r per second lets at most b + 60r requests
// through in any minute, so r = (perMinute - b) / 60.
func newTokenLimiter(perMinute, burst int) *tokenLimiter {
	if burst >= perMinute {
		burst = max(perMinute/4, 1)
	}
	perSecond := float64(perMinute-burst) / 60
	return &tokenLimiter{bucket: rate.NewLimiter(rate.Limit(perSecond), burst),
		credit: rate.NewLimiter(rate.Limit(pollShare*perSecond), maxCreditPages)}
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
	if low {
		sent, err := l.poll(ctx, now)
		if err == nil && !sent {
			var credited bool
			if credited, err = l.pollCredit(ctx, now); err == nil && !credited {
				return fmt.Errorf("digitalocean: status poll: %w", provider.ErrDeferred)
			}
		}
		if err != nil {
			return err
		}
		l.mu.Lock()
		l.pages = 1
		l.mu.Unlock()
		if g := provider.PollGrantOf(ctx); g != nil {
			g.Spare = sent
		}
		if sent {
			return nil
		}
		// The budget is short but polls have credit: this one waits its turn like a create.
	} else if continuedPoll(ctx) {
		l.mu.Lock()
		l.pages++
		l.mu.Unlock()
	}
	if l.shared != nil {
		return l.shared.take(ctx, maxWait, low || continuedPoll(ctx))
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

// poll lets a low-priority request through at once when the budget has room to spare: nothing
// waits for it here and the bucket holds the reserve beyond it.
func (l *tokenLimiter) poll(ctx context.Context, now time.Time) (bool, error) {
	if l.shared != nil {
		if l.shared.busy() {
			return false, nil
		}
		return l.shared.poll(ctx)
	}
	if l.bucket.TokensAt(now) < 1+pollReserve*float64(l.bucket.Burst()) || !l.bucket.AllowN(now, 1) {
		return false, nil
	}
	return true, nil
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
