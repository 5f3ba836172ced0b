package observe

import (
	"net/http"
	"strconv"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
)

// ProviderTransport wraps base (one provider API's HTTP transport, below its rate limiter, so
// it sees each request that really goes out) with a client span per request (the global
// tracer provider: a no-op unless tracing is configured; the W3C traceparent is sent) and the
// bc_provider_* series. Neither records headers, so the bearer token never reaches telemetry.
func ProviderTransport(provider string, base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	counted := &countingTransport{provider: provider, base: base}
	return otelhttp.NewTransport(counted,
		otelhttp.WithPropagators(Propagator()),
		otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string {
			return provider + " " + r.Method + " " + Endpoint(r.URL.Path)
		}))
}

type countingTransport struct {
	provider string
	base     http.RoundTripper
}

func (t *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	endpoint := Endpoint(req.URL.Path)
	start := time.Now()
	resp, err := t.base.RoundTrip(req)
	providerDuration.WithLabelValues(t.provider, endpoint).Observe(time.Since(start).Seconds())
	status := "error"
	if err == nil {
		status = strconv.Itoa(resp.StatusCode)
		if v := resp.Header.Get("ratelimit-remaining"); v != "" {
			if n, perr := strconv.ParseFloat(v, 64); perr == nil {
				providerRemaining.WithLabelValues(t.provider).Set(n)
			}
		}
	}
	providerRequests.WithLabelValues(t.provider, endpoint, req.Method, status).Inc()
	return resp, err
}
