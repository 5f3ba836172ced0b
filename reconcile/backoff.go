package reconcile

import (
	"math"
	"math/rand/v2"
	"time"
)

// Backoff decides how long to wait before the next attempt after failures.
type Backoff interface {
	// Delay returns the wait after the attempt-th consecutive failure (1 for the first).
	Delay(attempt int) time.Duration
}

// Exponential doubles the wait on every consecutive failure, from Initial up to Max, and
// spreads each wait by ±Jitter (a fraction, 0.2 for ±20%) so that items failing together do
// not come back together.
type Exponential struct {
	Initial time.Duration
	Max     time.Duration
	Jitter  float64
}

// DefaultBackoff is the runner's backoff unless Options.Backoff says otherwise.
var DefaultBackoff = Exponential{Initial: time.Second, Max: 5 * time.Minute, Jitter: 0.2}

// Delay implements Backoff.
func (e Exponential) Delay(attempt int) time.Duration {
	if e.Initial <= 0 {
		return 0
	}
	d := e.Initial
	for i := 1; i < attempt && (e.Max <= 0 || d < e.Max) && d < math.MaxInt64/2; i++ {
		d *= 2
	}
	if e.Max > 0 && d > e.Max {
		d = e.Max
	}
	if j := min(e.Jitter, 1); j > 0 {
		spread := float64(d) * j
		d = time.Duration(float64(d) - spread + rand.Float64()*2*spread)
	}
	return d
}
