package sim

import (
	"net/http"
	"sort"
	"strconv"
	"time"
)

// rateWindow keeps the admission times of one token's requests over the last hour, oldest
// first, so both rolling windows (a minute and an hour) are answered from one slice.
type rateWindow struct {
	times []time.Time
}

// rateAnswer is what admit decided, with the values the rate headers carry.
type rateAnswer struct {
	allowed    bool
	limit      int       // ratelimit-limit: the hourly budget, as DigitalOcean reports it
	remaining  int       // ratelimit-remaining of the hourly budget
	reset      time.Time // ratelimit-reset: when the oldest request in the hour expires
	retryAfter time.Duration
}

// admit records a request at now unless a window is full. perMinute or perHour below zero
// disables that window. Refused requests are not recorded: they do not use the budget.
func (w *rateWindow) admit(now time.Time, perMinute, perHour int) rateAnswer {
	w.prune(now)
	minuteStart := sort.Search(len(w.times), func(i int) bool { return w.times[i].After(now.Add(-time.Minute)) })
	inMinute := len(w.times) - minuteStart
	ans := rateAnswer{allowed: true}
	switch {
	case perMinute >= 0 && inMinute >= perMinute:
		ans.allowed = false
		ans.retryAfter = w.times[minuteStart].Add(time.Minute).Sub(now)
	case perHour >= 0 && len(w.times) >= perHour:
		ans.allowed = false
		ans.retryAfter = w.times[0].Add(time.Hour).Sub(now)
	default:
		w.times = append(w.times, now)
	}
	ans.limit = perHour
	if perHour < 0 {
		// Unlimited: report a budget that never runs out, as a roomy account would see it.
		ans.limit = 1 << 30
	}
	ans.remaining = max(ans.limit-len(w.times), 0)
	if !ans.allowed {
		// A refusal by either window reports nothing left, as DigitalOcean's 429 does even
		// when only the per-minute burst is spent.
		ans.remaining = 0
	}
	ans.reset = now
	if len(w.times) > 0 {
		ans.reset = w.times[0].Add(time.Hour)
	}
	return ans
}

// prune drops admissions older than an hour, copying when the dead prefix is large so the
// backing array does not grow without bound.
func (w *rateWindow) prune(now time.Time) {
	cut := sort.Search(len(w.times), func(i int) bool { return w.times[i].After(now.Add(-time.Hour)) })
	if cut == 0 {
		return
	}
	if cut > len(w.times)/2 {
		w.times = append([]time.Time(nil), w.times[cut:]...)
		return
	}
	w.times = w.times[cut:]
}

// setRateHeaders writes the headers godo's populateRate reads on every answer.
func setRateHeaders(h http.Header, ans rateAnswer) {
	h.Set("ratelimit-limit", strconv.Itoa(ans.limit))
	h.Set("ratelimit-remaining", strconv.Itoa(ans.remaining))
	h.Set("ratelimit-reset", strconv.FormatInt(ceilUnix(ans.reset), 10))
}

// setRetryAfter writes retry-after in whole seconds, rounded up and at least one.
func setRetryAfter(h http.Header, d time.Duration) {
	secs := int64((d + time.Second - 1) / time.Second)
	h.Set("retry-after", strconv.FormatInt(max(secs, 1), 10))
}

// ceilUnix rounds t up to whole Unix seconds, so a client that waits until the reset second
// never arrives early.
func ceilUnix(t time.Time) int64 {
	s := t.Unix()
	if t.Nanosecond() > 0 {
		s++
	}
	return s
}
