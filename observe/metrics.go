// Package observe holds the control plane's telemetry instruments: the process-wide Prometheus
// series the work queue, the provider clients and their rate limiters report into, and the
// OpenTelemetry tracing set-up (off unless an OTLP endpoint is configured). It is a leaf package:
// store, provider and server import it, it imports none of them.
//
// The instruments are process-wide (one process may run several servers in tests): each server
// registers them on its own registry with Register, and a test reads the change a call made.
package observe

import (
	"errors"
	"regexp"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

var (
	workClaims = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "bc_work_claims_total", Help: "Work items leased by this replica, by kind.",
	}, []string{"kind"})
	workLeaseExpiries = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "bc_work_lease_expiries_total", Help: "Claims by this replica that took over a lease another holder let lapse, by kind.",
	}, []string{"kind"})
	workFenced = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "bc_work_fenced_writes_refused_total", Help: "Holder writes refused because the lease epoch moved or the lease was released, by kind and operation.",
	}, []string{"kind", "op"})
	resourcesRequeued = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "bc_resources_requeued_total", Help: "Provider-side resources the periodic safety net found not resting without a due work item and queued, by kind (each is a lost work item).",
	}, []string{"kind"})

	providerRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "bc_provider_requests_total", Help: "HTTP requests sent to a provider API, by provider, endpoint (path with ids replaced), method and status (or \"error\" when no answer came).",
	}, []string{"provider", "endpoint", "method", "status"})
	providerDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "bc_provider_request_duration_seconds", Help: "Latency of provider API requests (after the rate limiter let them go), by provider and endpoint.",
		Buckets: prometheus.ExponentialBuckets(0.005, 2, 13),
	}, []string{"provider", "endpoint"})
	providerRemaining = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "bc_provider_ratelimit_remaining", Help: "Requests the provider last said remain in the token's budget (its ratelimit-remaining header).",
	}, []string{"provider"})
	rateWaits = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "bc_provider_ratelimit_waits_total", Help: "Passes through the client-side rate limiter, by provider and outcome: sent (at once), waited (slept first), refused (the wait was too long: rate limited), deferred (a status poll left for later), error.",
	}, []string{"provider", "outcome"})
	rateWaitSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "bc_provider_ratelimit_wait_seconds", Help: "Time requests spent in the client-side rate limiter before going out, by provider.",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 15),
	}, []string{"provider"})

	watchesOpen = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "bc_event_watches_open", Help: "WatchEvents streams this process is serving now (each holds a connection; one shared reader polls the event log for all).",
	})

	authzChecks = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "bc_authz_check_duration_seconds", Help: "Latency of authorization engine checks, by operation (check, batch) and outcome (allowed, denied, error).",
		Buckets: prometheus.ExponentialBuckets(0.0001, 2, 16),
	}, []string{"op", "outcome"})
)

// instruments are registered on every registry Register is given.
var instruments = []prometheus.Collector{
	workClaims, workLeaseExpiries, workFenced, resourcesRequeued,
	providerRequests, providerDuration, providerRemaining, rateWaits, rateWaitSeconds,
	authzChecks, watchesOpen, buildInfo,
}

// Register adds the Go runtime and process collectors and every process-wide instrument to reg.
func Register(reg prometheus.Registerer) error {
	all := append([]prometheus.Collector{
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	}, instruments...)
	var errs []error
	for _, c := range all {
		if err := reg.Register(c); err != nil {
			var already prometheus.AlreadyRegisteredError
			if !errors.As(err, &already) {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// WorkClaimed records a claim of n items of kind, takenOver of which had a lapsed lease.
func WorkClaimed(kind string, n, takenOver int) {
	if n > 0 {
		workClaims.WithLabelValues(kind).Add(float64(n))
	}
	if takenOver > 0 {
		workLeaseExpiries.WithLabelValues(kind).Add(float64(takenOver))
	}
}

// FenceRefused records a holder write (op: renew, complete, retry, check lease, ...) refused by
// the epoch fence.
func FenceRefused(kind, op string) { workFenced.WithLabelValues(kind, op).Inc() }

// ResourceRequeued records a resource of kind the periodic safety net found without a due work
// item and queued.
func ResourceRequeued(kind string) { resourcesRequeued.WithLabelValues(kind).Inc() }

// RequeueKinds makes bc_resources_requeued_total export every kind at 0 before the first
// repair, so an alert or dashboard tells "none" from "not reported".
func RequeueKinds(kinds ...string) {
	for _, k := range kinds {
		resourcesRequeued.WithLabelValues(k)
	}
}

// Rate limiter outcomes for RateLimited.
const (
	RateSent     = "sent"
	RateWaited   = "waited"
	RateRefused  = "refused"
	RateDeferred = "deferred"
	RateError    = "error"
)

// RateLimited records one pass through a provider's client-side rate limiter: its outcome and
// the time it took.
func RateLimited(provider, outcome string, waited time.Duration) {
	if outcome == RateSent && waited > time.Millisecond {
		outcome = RateWaited
	}
	rateWaits.WithLabelValues(provider, outcome).Inc()
	if outcome == RateSent || outcome == RateWaited {
		rateWaitSeconds.WithLabelValues(provider).Observe(waited.Seconds())
	}
}

// WatchOpened counts a WatchEvents stream as open; the returned func counts it closed (call it
// once, when the stream's handler returns).
func WatchOpened() (closed func()) {
	watchesOpen.Inc()
	return watchesOpen.Dec
}

// AuthzChecked records one authorization engine call.
func AuthzChecked(op string, allowed bool, err error, d time.Duration) {
	outcome := "denied"
	switch {
	case err != nil:
		outcome = "error"
	case allowed:
		outcome = "allowed"
	}
	authzChecks.WithLabelValues(op, outcome).Observe(d.Seconds())
}

// idSegment matches a path segment that names one object rather than a collection: anything
// with a digit (numeric ids, UUIDs, versions after the first segment) or longer than 24 bytes.
var idSegment = regexp.MustCompile(`[0-9]|^.{25,}$`)

// Endpoint reduces a request path to a label of bounded cardinality: the first segment (the API
// version) stays, every segment that looks like an id becomes {id}.
func Endpoint(path string) string {
	segs := strings.Split(strings.Trim(path, "/"), "/")
	for i, s := range segs {
		if i > 0 && idSegment.MatchString(s) {
			segs[i] = "{id}"
		}
	}
	return "/" + strings.Join(segs, "/")
}
