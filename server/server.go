// Package server serves the control plane over one HTTP listener: Connect, gRPC and gRPC-Web for
// every service, the JSON mapping at /api/compute/<group>/<method>, gRPC health and reflection,
// Prometheus metrics and CORS. Handlers are thin; the rules live in core.
package server

import (
	"log/slog"
	"net/http"
	"time"

	"buf.build/go/protovalidate"
	"connectrpc.com/connect"
	"connectrpc.com/grpcreflect"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/trace"

	c "better-compute.dev/compute/gen/go/bettercompute/compute/v1/computev1connect"
	"better-compute.dev/compute/observe"
	"better-compute.dev/compute/requestid"
	"better-compute.dev/compute/store"
	"better-compute.dev/compute/web"
)

// Options configure the handler.
type Options struct {
	// Services are core's parts the handlers call.
	Services Services
	// DB is the database the health checks and the pool's metrics read; the handlers never get it.
	DB     *store.DB
	Logger *slog.Logger
	// CORSOrigins are the browser origins allowed; "*" allows any (bearer tokens, no cookies).
	CORSOrigins []string
	// Registry receives the metrics; nil makes a private one.
	Registry *prometheus.Registry
	// BodyReadTimeout bounds the time to receive a request body (0: BodyReadTimeout).
	BodyReadTimeout time.Duration
	// Health answers /healthz, /readyz and gRPC health; nil checks DB and Base's engine.
	Health *Health
	// MetricsElsewhere leaves /metrics off this handler: the registry is served on a listener
	// of its own (BC_METRICS_LISTEN), since the API port faces tenants.
	MetricsElsewhere bool
	// TracerProvider makes the server spans of every call (otelconnect; a W3C traceparent on
	// the request is honoured as the parent); nil takes the global provider, a no-op unless
	// tracing was configured.
	TracerProvider trace.TracerProvider
}

// ServiceNames lists every service, for health and reflection: the services of the generated
// descriptors (Procedures), so a new service needs only its handler mounted in New.
var ServiceNames = serviceNames()

// New builds the whole HTTP handler.
// compressMinBytes is the smallest answer compressed for a client that accepts gzip.
const compressMinBytes = 16 << 10

func New(opts Options) (http.Handler, error) {
	validator, err := protovalidate.New()
	if err != nil {
		return nil, err
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	reg := opts.Registry
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	m, err := newMetrics(reg, opts.DB)
	if err != nil {
		return nil, err
	}
	tracing, err := tracingInterceptor(opts.TracerProvider)
	if err != nil {
		return nil, err
	}
	ic := newEdge(opts.Services.Base, validator, log, m)
	ho := []connect.HandlerOption{
		connect.WithInterceptors(append([]connect.Interceptor{tracing}, ic.interceptors()...)...), connect.WithReadMaxBytes(MaxBodyBytes),
		connect.WithCodec(strictJSON{"json"}), connect.WithCodec(strictJSON{"json; charset=utf-8"}),
		// Most answers are a few hundred bytes to a few KiB: gzip costs them more CPU than it saves
		// bytes (bench/creates; docs/benchmarks.md, "Creates"). Lists of many items still compress.
		connect.WithCompressMinBytes(compressMinBytes),
	}
	svc := opts.Services

	api := http.NewServeMux()
	mount := func(path string, h http.Handler) { api.Handle(path, h) }
	mount(c.NewLoadBalancerServiceHandler(loadBalancers{svc.LoadBalancers}, ho...))
	mount(c.NewTenantServiceHandler(tenants{svc.Tenancy}, ho...))
	mount(c.NewProjectServiceHandler(projects{svc.Tenancy}, ho...))
	mount(c.NewProviderAccountServiceHandler(accounts{svc.Tenancy}, ho...))
	mount(c.NewPoolServiceHandler(poolService{svc.Pools}, ho...))
	mount(c.NewNetworkServiceHandler(networks{svc.Resources}, ho...))
	mount(c.NewCertificateServiceHandler(certificates{svc.Resources}, ho...))
	mount(c.NewInstanceServiceHandler(instances{svc.Resources}, ho...))
	mount(c.NewEventServiceHandler(eventService{svc.Events, ic}, ho...))
	mount(c.NewUsageServiceHandler(usage{svc.Events}, ho...))
	mount(c.NewMetalServiceHandler(metalService{svc.Metal}, ho...))
	mount(c.NewSubstrateServiceHandler(substrateService{svc.Substrates}, ho...))
	// The join is authenticated by its join token, not a bearer token: of the chain it takes only
	// the recovery and its translation into Connect's terms.
	mount(c.NewSubstrateJoinServiceHandler(substrateJoin{svc.Substrates, ic}, connect.WithInterceptors(tracing, mappingErrors(ic.observer), recovering(log)),
		connect.WithReadMaxBytes(64<<10),
		connect.WithCodec(strictJSON{"json"}), connect.WithCodec(strictJSON{"json; charset=utf-8"})))
	mount("/", web.Handler()) // the console (package web) answers the GETs that no service claims

	root := http.NewServeMux()
	bodyTimeout := opts.BodyReadTimeout
	if bodyTimeout <= 0 {
		bodyTimeout = BodyReadTimeout
	}
	// Credentials before content: the token is resolved before the body is read or judged.
	root.Handle("/", authenticateFirst(ic, readBodyFirst(bodyTimeout, api)))
	root.Handle(JSONPrefix, authenticateFirst(ic, readBodyFirst(bodyTimeout, jsonMapping(api))))
	root.HandleFunc("GET "+JSONPrefix+"openapi.json", serveOpenAPI)
	health := opts.Health
	if health == nil {
		health = NewHealth(opts.DB, svc.Base.Authz)
	}
	mountHealth(root, health)
	if err := reg.Register(observe.Readiness(health.Ready)); err != nil {
		return nil, err
	}
	reflector := grpcreflect.NewStaticReflector(ServiceNames...)
	root.Handle(grpcreflect.NewHandlerV1(reflector))
	root.Handle(grpcreflect.NewHandlerV1Alpha(reflector))
	if !opts.MetricsElsewhere {
		root.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	}
	return requestid.Middleware(withCORS(opts.CORSOrigins, root)), nil
}
