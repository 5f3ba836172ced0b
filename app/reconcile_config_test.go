package app

import (
	"testing"
	"time"
)

func TestReconcileConfigFromEnv(t *testing.T) {
	t.Parallel()
	cases := []struct {
		reason  string
		env     map[string]string
		wantErr bool
		check   func(ReconcileConfig) bool
	}{
		{"defaults: a one-minute periodic pass, creates inside half the lease", nil, false, func(c ReconcileConfig) bool {
			return c.PeriodicInterval == time.Minute && c.LeaseTTL == 30*time.Second && c.CreateWindow <= c.LeaseTTL/2
		}},
		{"short knobs for tests", map[string]string{"BC_LEASE_TTL": "3s", "BC_PERIODIC_INTERVAL": "5s", "BC_DO_REQUESTS_PER_MINUTE": "6000"}, false,
			func(c ReconcileConfig) bool {
				return c.LeaseTTL == 3*time.Second && c.PeriodicInterval == 5*time.Second && c.CreateWindow == 1500*time.Millisecond &&
					c.DigitalOcean.RequestsPerMinute == 6000 && c.DigitalOcean.RequestTimeout == 1500*time.Millisecond
			}},
		{"the periodic pass must come within five minutes", map[string]string{"BC_PERIODIC_INTERVAL": "6m"}, true, nil},
		{"a duration that does not parse", map[string]string{"BC_LEASE_TTL": "soon"}, true, nil},
		{"a number that is not positive", map[string]string{"BC_RECONCILE_CONCURRENCY": "0"}, true, nil},
	}
	for _, c := range cases {
		got, err := ReconcileConfigFromEnv(func(k string) string { return c.env[k] })
		if (err != nil) != c.wantErr {
			t.Errorf("%s: error %v, want error %v", c.reason, err, c.wantErr)
			continue
		}
		if c.check != nil && !c.check(got) {
			t.Errorf("%s: got %+v", c.reason, got)
		}
	}
}
