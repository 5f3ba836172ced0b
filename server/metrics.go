package server

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the service's Prometheus series, registered on a registry of the server's own so
// several servers in one test process do not collide.
type metrics struct {
	calls    *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "bc_rpc_calls_total", Help: "RPCs served, by procedure and Connect code.",
		}, []string{"procedure", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "bc_rpc_duration_seconds", Help: "RPC latency by procedure.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		}, []string{"procedure"}),
	}
	reg.MustRegister(m.calls, m.duration)
	return m
}

func (m *metrics) observe(procedure, code string, d time.Duration) {
	m.calls.WithLabelValues(procedure, code).Inc()
	m.duration.WithLabelValues(procedure).Observe(d.Seconds())
}
