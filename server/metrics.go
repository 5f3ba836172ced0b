package server

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"better-compute.dev/compute/observe"
	"better-compute.dev/compute/store"
)

// metrics are the service's Prometheus series, registered on a registry of the server's own so
// several servers in one test process do not collide. Beside the RPC series it registers the Go
// runtime and process collectors, the process-wide instruments of package observe (work queue
// claims and fencing, provider requests and rate limiting, authorization latency) and, when the
// server has a database, the pool, queue, events and budget state read at each scrape.
// docs/observability.md lists every family.
type metrics struct {
	calls    *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

func newMetrics(reg prometheus.Registerer, db *store.DB) (*metrics, error) {
	m := &metrics{
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "bc_rpc_calls_total", Help: "RPCs served, by procedure and Connect code.",
		}, []string{"procedure", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "bc_rpc_duration_seconds", Help: "RPC latency by procedure.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		}, []string{"procedure"}),
	}
	if err := reg.Register(m.calls); err != nil {
		return nil, err
	}
	if err := reg.Register(m.duration); err != nil {
		return nil, err
	}
	if err := observe.Register(reg); err != nil {
		return nil, err
	}
	if db != nil {
		if err := reg.Register(newDBCollector(db)); err != nil {
			return nil, err
		}
		reruns := prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "bc_db_tx_reruns_total",
			Help: "Transactions this process ran again after losing a serialization race, a deadlock or a connection before COMMIT.",
		}, func() float64 { return float64(store.TransactionRetries()) })
		if err := reg.Register(reruns); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *metrics) observe(procedure, code string, d time.Duration) {
	m.calls.WithLabelValues(procedure, code).Inc()
	m.duration.WithLabelValues(procedure).Observe(d.Seconds())
}

// MetricsHandler serves reg in the Prometheus text format (GET /metrics), for a listener of its
// own (BC_METRICS_LISTEN) or the API's.
func MetricsHandler(reg *prometheus.Registry) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	return mux
}
