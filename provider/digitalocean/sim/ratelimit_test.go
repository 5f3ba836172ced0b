package sim_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"testing"
	"time"

	"better-compute.dev/compute/provider/digitalocean/sim"
)

// TestRateLimitBudgetAndReset walks one token through both rolling windows on a manual clock:
// the minute budget refuses the request after it and comes back once the oldest request is a
// minute old; the hour budget does the same an hour later.
func TestRateLimitBudgetAndReset(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sim.Options{RequestsPerMinute: 3, RequestsPerHour: 5})
	steps := []struct {
		reason        string
		advance       time.Duration
		wantStatus    int
		wantRemaining int
		wantRetry     string
	}{
		{reason: "first request of the minute", wantStatus: 200, wantRemaining: 4},
		{reason: "second", wantStatus: 200, wantRemaining: 3},
		{reason: "third fills the minute budget", wantStatus: 200, wantRemaining: 2},
		{reason: "fourth is over the minute budget: nothing remains", wantStatus: 429, wantRemaining: 0, wantRetry: "60"},
		{reason: "still inside the minute", advance: 30 * time.Second, wantStatus: 429, wantRemaining: 0, wantRetry: "30"},
		{reason: "the minute rolled over", advance: 31 * time.Second, wantStatus: 200, wantRemaining: 1},
		{reason: "fifth in the hour fills the hour budget", wantStatus: 200, wantRemaining: 0},
		{reason: "over the hour budget", advance: 2 * time.Minute, wantStatus: 429, wantRemaining: 0, wantRetry: "3419"},
		{reason: "the hour rolled over", advance: time.Hour, wantStatus: 200, wantRemaining: 4},
	}
	for _, s := range steps {
		e.clock.Advance(s.advance)
		resp := rawRequest(t, http.MethodGet, e.url+"/v2/load_balancers", e.token, "")
		if resp.StatusCode != s.wantStatus {
			t.Fatalf("%s: status %d, want %d", s.reason, resp.StatusCode, s.wantStatus)
		}
		if got := resp.Header.Get("ratelimit-limit"); got != "5" {
			t.Errorf("%s: ratelimit-limit %q, want the hourly budget 5", s.reason, got)
		}
		if got := resp.Header.Get("ratelimit-remaining"); got != strconv.Itoa(s.wantRemaining) {
			t.Errorf("%s: ratelimit-remaining %q, want %d", s.reason, got, s.wantRemaining)
		}
		reset, err := strconv.ParseInt(resp.Header.Get("ratelimit-reset"), 10, 64)
		if err != nil || reset < e.clock.Now().Unix() {
			t.Errorf("%s: ratelimit-reset %q is not a unix time from now on", s.reason, resp.Header.Get("ratelimit-reset"))
		}
		if got := resp.Header.Get("retry-after"); got != s.wantRetry {
			t.Errorf("%s: retry-after %q, want %q", s.reason, got, s.wantRetry)
		}
		if s.wantStatus == 429 {
			var body struct{ ID, Message, RequestID string }
			if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || body.ID != "too_many_requests" {
				t.Errorf("%s: body %+v (%v), want id too_many_requests", s.reason, body, err)
			}
		}
	}
}

// TestRateLimitThroughGodo checks that godo parses the headers into Response.Rate and that a
// 429 reaches it as an ErrorResponse; each token has its own budget.
func TestRateLimitThroughGodo(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sim.Options{RequestsPerMinute: 2})
	ctx := context.Background()
	for i := range 2 {
		_, resp, err := e.do.LoadBalancers.List(ctx, nil)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		if resp.Rate.Limit != sim.DefaultRequestsPerHour || resp.Rate.Remaining != sim.DefaultRequestsPerHour-1-i {
			t.Errorf("request %d: rate %+v", i, resp.Rate)
		}
		if resp.Rate.Reset.IsZero() {
			t.Errorf("request %d: no reset time parsed", i)
		}
	}
	_, _, err := e.do.LoadBalancers.List(ctx, nil)
	if statusOf(err) != http.StatusTooManyRequests || messageOf(err) != "API Rate limit exceeded." {
		t.Fatalf("third request: %v, want 429 API Rate limit exceeded.", err)
	}
	other := "other-token"
	e.srv.AddToken(other)
	if _, _, err := godoClient(t, e.url, other).LoadBalancers.List(ctx, nil); err != nil {
		t.Errorf("another token shares the budget: %v", err)
	}
}

// TestUnlimitedWindows: a negative budget turns a window off.
func TestUnlimitedWindows(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sim.Options{RequestsPerMinute: -1, RequestsPerHour: -1})
	for i := range 300 {
		resp := rawRequest(t, http.MethodGet, e.url+"/v2/vpcs", e.token, "")
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("request %d: status %d", i, resp.StatusCode)
		}
	}
}
