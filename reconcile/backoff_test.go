package reconcile

import (
	"testing"
	"time"
)

func TestExponentialDelay(t *testing.T) {
	t.Parallel()
	cases := []struct {
		reason  string
		backoff Exponential
		attempt int
		want    time.Duration
	}{
		{reason: "first failure waits the initial delay", backoff: Exponential{Initial: time.Second, Max: time.Minute}, attempt: 1, want: time.Second},
		{reason: "each failure doubles", backoff: Exponential{Initial: time.Second, Max: time.Minute}, attempt: 4, want: 8 * time.Second},
		{reason: "the cap holds", backoff: Exponential{Initial: time.Second, Max: time.Minute}, attempt: 30, want: time.Minute},
		{reason: "a huge attempt count does not overflow", backoff: Exponential{Initial: time.Second, Max: time.Minute}, attempt: 1 << 20, want: time.Minute},
		{reason: "attempt zero is treated as the first", backoff: Exponential{Initial: time.Second, Max: time.Minute}, attempt: 0, want: time.Second},
		{reason: "no cap and a huge attempt count does not overflow", backoff: Exponential{Initial: time.Second}, attempt: 1 << 20, want: time.Second << 33},
		{reason: "no initial delay means no wait", backoff: Exponential{}, attempt: 3, want: 0},
	}
	for _, tc := range cases {
		if got := tc.backoff.Delay(tc.attempt); got != tc.want {
			t.Errorf("%s: Delay(%d) = %v, want %v", tc.reason, tc.attempt, got, tc.want)
		}
	}
}

func TestExponentialJitterStaysInBounds(t *testing.T) {
	t.Parallel()
	b := Exponential{Initial: 10 * time.Second, Max: time.Hour, Jitter: 0.2}
	seen := map[time.Duration]bool{}
	for range 200 {
		d := b.Delay(2) // 20 s ± 20%
		if d < 16*time.Second || d > 24*time.Second {
			t.Fatalf("Delay(2) = %v, want within 16s..24s", d)
		}
		seen[d] = true
	}
	if len(seen) < 2 {
		t.Error("jitter produced a single value")
	}
}
