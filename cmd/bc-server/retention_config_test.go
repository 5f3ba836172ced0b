package main

import (
	"strings"
	"testing"
	"time"

	"better-compute.dev/compute/app"
)

// TestParseConfigRetention: the retention variables land in the reconcilers' retention, and a
// value under its floor (the idempotency promise, a lease's fencing, a month's bill) is refused.
func TestParseConfigRetention(t *testing.T) {
	t.Parallel()
	cases := []struct {
		reason  string
		env     map[string]string
		want    app.RetentionConfig
		refused string // the variable the error names; "" accepted
	}{
		{"unset: the zero value, production's defaults", nil, app.RetentionConfig{}, ""},
		{"every one set at its floor", map[string]string{
			"BC_EVENT_RETENTION": "1h", "BC_IDEMPOTENCY_RETENTION": "24h", "BC_WORK_RETENTION": "1h", "BC_USAGE_RETENTION": "768h",
		}, app.RetentionConfig{Events: time.Hour, Idempotency: 24 * time.Hour, WorkItems: time.Hour, Usage: 768 * time.Hour}, ""},
		{"idempotency records kept less than the 24 h replay", map[string]string{"BC_IDEMPOTENCY_RETENTION": "12h"}, app.RetentionConfig{}, "BC_IDEMPOTENCY_RETENTION"},
		{"usage pruned before its month is billed", map[string]string{"BC_USAGE_RETENTION": "500h"}, app.RetentionConfig{}, "BC_USAGE_RETENTION"},
		{"idle work pruned within a lease's reach", map[string]string{"BC_WORK_RETENTION": "10m"}, app.RetentionConfig{}, "BC_WORK_RETENTION"},
		{"events pruned under an hour", map[string]string{"BC_EVENT_RETENTION": "59m"}, app.RetentionConfig{}, "BC_EVENT_RETENTION"},
	}
	for _, c := range cases {
		env := validEnv(t)
		for k, v := range c.env {
			env[k] = v
		}
		got, err := parseConfig(lookup(env), true)
		switch {
		case c.refused != "" && (err == nil || !strings.Contains(err.Error(), c.refused)):
			t.Errorf("%s: error %v, want one naming %s", c.reason, err, c.refused)
		case c.refused == "" && err != nil:
			t.Errorf("%s: %v", c.reason, err)
		case c.refused == "" && got.App.Reconcilers.Retention != c.want:
			t.Errorf("%s: retention %+v, want %+v", c.reason, got.App.Reconcilers.Retention, c.want)
		}
	}
}
