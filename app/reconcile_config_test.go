package app

import (
	"testing"
	"time"
)

func TestReconcileConfigDefaults(t *testing.T) {
	t.Parallel()
	cases := []struct {
		reason  string
		in      ReconcileConfig
		wantErr bool
		check   func(ReconcileConfig) bool
	}{
		{"defaults: a one-minute periodic pass, creates inside half the lease", ReconcileConfig{}, false, func(c ReconcileConfig) bool {
			return c.PeriodicInterval == time.Minute && c.LeaseTTL == 30*time.Second && c.CreateWindow <= c.LeaseTTL/2
		}},
		{"short knobs for tests", func() ReconcileConfig {
			var c ReconcileConfig
			c.LeaseTTL, c.PeriodicInterval, c.DigitalOcean.RequestsPerMinute = 3*time.Second, 5*time.Second, 6000
			return c
		}(), false, func(c ReconcileConfig) bool {
			return c.LeaseTTL == 3*time.Second && c.PeriodicInterval == 5*time.Second && c.CreateWindow == 1500*time.Millisecond &&
				c.DigitalOcean.RequestsPerMinute == 6000 && c.DigitalOcean.RequestTimeout == 1500*time.Millisecond
		}},
		{"the periodic pass must come within five minutes", ReconcileConfig{PeriodicInterval: 6 * time.Minute}, true, nil},
	}
	for _, c := range cases {
		got, err := c.in.WithDefaults()
		if (err != nil) != c.wantErr {
			t.Errorf("%s: error %v, want error %v", c.reason, err, c.wantErr)
			continue
		}
		if c.check != nil && !c.check(got) {
			t.Errorf("%s: got %+v", c.reason, got)
		}
	}
}

// TestStartRefusesBadReconcileConfig: a replica whose reconcilers cannot run does not start
// (it used to log the error and serve without them).
func TestStartRefusesBadReconcileConfig(t *testing.T) {
	t.Parallel()
	a, err := Start(t.Context(), Config{Listen: "127.0.0.1:0", Reconcile: true, Reconcilers: ReconcileConfig{PeriodicInterval: 6 * time.Minute}})
	if err == nil {
		a.Close(t.Context())
		t.Fatal("Start accepted a periodic interval over five minutes")
	}
}
