package observe

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/propagation"
	sdkresource "go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Propagator is the trace context format the control plane reads and writes: W3C traceparent
// and tracestate.
func Propagator() propagation.TextMapPropagator { return propagation.TraceContext{} }

// TracingConfig says where spans go. With neither Endpoint nor FromEnvironment tracing is off:
// the provider is a no-op and nothing is exported.
type TracingConfig struct {
	// Endpoint is the OTLP/gRPC collector URL: http://host:4317 (plain) or https://host:4317.
	Endpoint string
	// FromEnvironment lets the exporter take its settings from the standard OTEL_EXPORTER_OTLP_*
	// variables (the caller saw OTEL_EXPORTER_OTLP_ENDPOINT or ..._TRACES_ENDPOINT set).
	FromEnvironment bool
	// SampleRatio is the share of new traces kept (0 means 1: all); a call that arrives with a
	// sampled traceparent is always kept.
	SampleRatio float64
	// Replica names this process in the resource (service.instance.id).
	Replica string
}

// Enabled reports whether spans are exported.
func (c TracingConfig) Enabled() bool { return c.Endpoint != "" || c.FromEnvironment }

// StartTracing builds the tracer provider for cfg and makes it the global one (the provider
// HTTP clients take it from there). Off, it returns a no-op provider and changes nothing global.
// shutdown flushes and stops the exporter.
func StartTracing(ctx context.Context, cfg TracingConfig) (tp trace.TracerProvider, shutdown func(context.Context) error, err error) {
	if !cfg.Enabled() {
		return noop.NewTracerProvider(), func(context.Context) error { return nil }, nil
	}
	var opts []otlptracegrpc.Option
	if cfg.Endpoint != "" {
		opts = append(opts, otlptracegrpc.WithEndpointURL(cfg.Endpoint))
	}
	exp, err := otlptracegrpc.New(ctx, opts...)
	if err != nil {
		return nil, nil, fmt.Errorf("tracing: otlp exporter: %w", err)
	}
	ratio := cfg.SampleRatio
	if ratio <= 0 || ratio > 1 {
		ratio = 1
	}
	attrs := []attribute.KeyValue{attribute.String("service.name", "bc-server")}
	if cfg.Replica != "" {
		attrs = append(attrs, attribute.String("service.instance.id", cfg.Replica))
	}
	res, err := sdkresource.Merge(sdkresource.Default(), sdkresource.NewSchemaless(attrs...))
	if err != nil {
		res = sdkresource.NewSchemaless(attrs...)
	}
	provider := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp),
		sdktrace.WithResource(res),
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(ratio))),
	)
	otel.SetTracerProvider(provider)
	otel.SetTextMapPropagator(Propagator())
	return provider, provider.Shutdown, nil
}

// TracerName is the instrumentation scope of the control plane's own spans.
const TracerName = "better-compute.dev/compute"

// maxStatementBytes bounds the statement text a database span carries. Statements are the
// package's constants with $n placeholders: arguments are never recorded.
const maxStatementBytes = 2048

// DatabaseTracer makes a client span for each statement and batch that runs inside a traced
// call (a statement with no recording span in its context, such as a reconciler's poll, makes
// none). It is a store.Tracer (store installs it on its pool; this package cannot name store,
// which imports it).
type DatabaseTracer struct{ tracer trace.Tracer }

// NewDatabaseTracer returns a tracer drawing spans from tp.
func NewDatabaseTracer(tp trace.TracerProvider) *DatabaseTracer {
	return &DatabaseTracer{tracer: tp.Tracer(TracerName + "/store")}
}

type dbSpanKey struct{}

func (t *DatabaseTracer) start(ctx context.Context, name, statement string) context.Context {
	if !trace.SpanFromContext(ctx).IsRecording() {
		return ctx
	}
	attrs := []attribute.KeyValue{attribute.String("db.system.name", "postgresql")}
	if statement != "" {
		if len(statement) > maxStatementBytes {
			statement = statement[:maxStatementBytes]
		}
		attrs = append(attrs, attribute.String("db.query.text", statement), attribute.String("db.operation.name", name))
	}
	ctx, span := t.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	return context.WithValue(ctx, dbSpanKey{}, span)
}

// sqlStateError is what the driver's server errors answer: their SQLSTATE.
type sqlStateError interface{ SQLState() string }

func (t *DatabaseTracer) end(ctx context.Context, err error, rows int64, single bool) {
	span, ok := ctx.Value(dbSpanKey{}).(trace.Span)
	if !ok {
		return
	}
	if single && err == nil {
		span.SetAttributes(attribute.Int64("db.response.returned_rows", rows))
	}
	if err != nil {
		// Only the SQLSTATE: a server message can quote the values of the row.
		code := "error"
		var se sqlStateError
		if errors.As(err, &se) && se.SQLState() != "" {
			code = se.SQLState()
			span.SetAttributes(attribute.String("db.response.status_code", code))
		}
		span.SetStatus(codes.Error, code)
	}
	span.End()
}

// StatementStart opens the span of a statement sent alone.
func (t *DatabaseTracer) StatementStart(ctx context.Context, sql string, _ []any) context.Context {
	return t.start(ctx, operation(sql), sql)
}

// StatementEnd ends the span of a statement sent alone.
func (t *DatabaseTracer) StatementEnd(ctx context.Context, rows int64, err error) {
	t.end(ctx, err, rows, true)
}

// BatchStart opens the span of a batch.
// A batch is one round trip: its span carries the statements' text (never their arguments), one
// per line, so a two-trip transaction (store.ExecuteTwoTrips) shows as its two batches.
func (t *DatabaseTracer) BatchStart(ctx context.Context, statements []string) context.Context {
	text := make([]string, 0, len(statements))
	for _, sql := range statements {
		text = append(text, strings.Join(strings.Fields(sql), " "))
	}
	return t.start(ctx, "BATCH", strings.Join(text, ";\n"))
}

// BatchStatement adds each statement of the batch as an event.
func (t *DatabaseTracer) BatchStatement(ctx context.Context, sql string, _ []any, _ error) {
	if span, ok := ctx.Value(dbSpanKey{}).(trace.Span); ok {
		span.AddEvent(operation(sql))
	}
}

// BatchEnd ends the span of a batch.
func (t *DatabaseTracer) BatchEnd(ctx context.Context, err error) {
	t.end(ctx, err, 0, false)
}

// operation is a statement's first keyword (SELECT, INSERT, WITH, ...), the span's name.
func operation(sql string) string {
	sql = strings.TrimSpace(sql)
	for strings.HasPrefix(sql, "--") {
		_, rest, _ := strings.Cut(sql, "\n")
		sql = strings.TrimSpace(rest)
	}
	word, _, _ := strings.Cut(sql, " ")
	word, _, _ = strings.Cut(word, "\n")
	word, _, _ = strings.Cut(word, "\t")
	if word == "" {
		return "SQL"
	}
	return strings.ToUpper(word)
}
