package observe

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// readinessTimeout bounds the readiness check one scrape runs.
const readinessTimeout = 3 * time.Second

var readyDesc = prometheus.NewDesc("bc_ready",
	"1 when this replica is ready (what GET /readyz answers 200 for), else 0; reason is none when ready, else why not (draining, database unreachable, database schema behind this binary, authorization engine unavailable).",
	[]string{"reason"}, nil)

// readiness exports bc_ready by running the replica's readiness check at each scrape.
type readiness struct {
	check func(context.Context) string
}

// Readiness is a collector of bc_ready: check returns "" when the replica is ready, else the
// reason it is not (the /readyz reason). It runs once per scrape, bounded by a timeout.
func Readiness(check func(context.Context) string) prometheus.Collector {
	return readiness{check: check}
}

func (r readiness) Describe(ch chan<- *prometheus.Desc) { ch <- readyDesc }

func (r readiness) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), readinessTimeout)
	defer cancel()
	reason := r.check(ctx)
	v := 1.0
	if reason != "" {
		v = 0
	} else {
		reason = "none"
	}
	ch <- prometheus.MustNewConstMetric(readyDesc, prometheus.GaugeValue, v, reason)
}
