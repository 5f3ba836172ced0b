package testwait_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"better-compute.dev/compute/testwait"
)

// recorder is a testing.TB whose Fatalf records the failure instead of ending the test.
type recorder struct {
	testing.TB
	failure string
}

func (r *recorder) Helper() {}

func (r *recorder) Fatalf(format string, args ...any) { r.failure = fmt.Sprintf(format, args...) }

func TestUntilReturnsOnceTheConditionHolds(t *testing.T) {
	calls := 0
	testwait.Until(t, time.Minute, "third call", func() (bool, string) {
		calls++
		return calls == 3, fmt.Sprintf("call %d", calls)
	})
	if calls != 3 {
		t.Fatalf("cond called %d times, want 3", calls)
	}
}

func TestUntilFailsWithTheLastExplanation(t *testing.T) {
	r := &recorder{TB: t}
	calls := 0
	testwait.Until(r, 0, "never", func() (bool, string) {
		calls++
		return false, fmt.Sprintf("still %d", calls)
	})
	if !strings.HasPrefix(r.failure, "never: not within 0s: still ") || calls == 0 {
		t.Fatalf("failure %q after %d calls", r.failure, calls)
	}
}
