// Package testwait is the one polling helper of the tests: wait until a condition holds, and fail
// with the condition's last explanation once a generous bound has passed. Tests assert on the
// outcome, never on how long it took.
package testwait

import (
	"testing"
	"time"
)

// Interval is the pause between two looks at the condition.
const Interval = 25 * time.Millisecond

// Until calls cond until it reports done, failing t with what and cond's last explanation when
// within has passed first.
func Until(t testing.TB, within time.Duration, what string, cond func() (done bool, why string)) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		done, why := cond()
		if done {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v: %s", what, within, why)
			return
		}
		time.Sleep(Interval)
	}
}
