package server

import (
	"connectrpc.com/connect"
	"connectrpc.com/otelconnect"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/trace"

	"better-compute.dev/compute/observe"
)

// tracingInterceptor makes a server span for each call, outermost so that validation,
// authentication and the handler's database statements are inside it. The caller's W3C
// traceparent is trusted as the parent (the trace continues, it is not merely linked): the
// replicas sit behind the platform's own load balancers, and a trace id reveals nothing.
// Metrics stay with Prometheus; message contents are never recorded.
func tracingInterceptor(tp trace.TracerProvider) (connect.Interceptor, error) {
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	return otelconnect.NewInterceptor(
		otelconnect.WithTracerProvider(tp),
		otelconnect.WithPropagator(observe.Propagator()),
		otelconnect.WithTrustRemote(),
		otelconnect.WithoutMetrics(),
	)
}
