package observe

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
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

// PgxTracer makes a client span for each statement and batch that runs inside a traced call
// (a statement with no recording span in its context, such as a reconciler's poll, makes none).
type PgxTracer struct{ tracer trace.Tracer }

var (
	_ pgx.QueryTracer = (*PgxTracer)(nil)
	_ pgx.BatchTracer = (*PgxTracer)(nil)
)

// NewPgxTracer returns a tracer drawing spans from tp.
func NewPgxTracer(tp trace.TracerProvider) *PgxTracer {
	return &PgxTracer{tracer: tp.Tracer(TracerName + "/store")}
}

type pgxSpanKey struct{}

func (t *PgxTracer) start(ctx context.Context, name, statement string) context.Context {
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
	return context.WithValue(ctx, pgxSpanKey{}, span)
}

func (t *PgxTracer) end(ctx context.Context, err error, tag *pgconn.CommandTag) {
	span, ok := ctx.Value(pgxSpanKey{}).(trace.Span)
	if !ok {
		return
	}
	if tag != nil && err == nil {
		span.SetAttributes(attribute.Int64("db.response.returned_rows", tag.RowsAffected()))
	}
	if err != nil {
		// Only the SQLSTATE: a server message can quote the values of the row.
		code := "error"
		var pe *pgconn.PgError
		if errors.As(err, &pe) {
			code = pe.Code
			span.SetAttributes(attribute.String("db.response.status_code", pe.Code))
		}
		span.SetStatus(codes.Error, code)
	}
	span.End()
}

// TraceQueryStart implements pgx.QueryTracer.
func (t *PgxTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	return t.start(ctx, operation(data.SQL), data.SQL)
}

// TraceQueryEnd implements pgx.QueryTracer.
func (t *PgxTracer) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryEndData) {
	t.end(ctx, data.Err, &data.CommandTag)
}

// TraceBatchStart implements pgx.BatchTracer.
// A batch is one round trip: its span carries the statements' text (never their arguments), one
// per line, so a two-trip transaction (store.ExecuteTwoTrips) shows as its two batches.
func (t *PgxTracer) TraceBatchStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceBatchStartData) context.Context {
	var text []string
	if data.Batch != nil {
		for _, q := range data.Batch.QueuedQueries {
			text = append(text, strings.Join(strings.Fields(q.SQL), " "))
		}
	}
	return t.start(ctx, "BATCH", strings.Join(text, ";\n"))
}

// TraceBatchQuery implements pgx.BatchTracer: each statement of the batch is an event.
func (t *PgxTracer) TraceBatchQuery(ctx context.Context, _ *pgx.Conn, data pgx.TraceBatchQueryData) {
	if span, ok := ctx.Value(pgxSpanKey{}).(trace.Span); ok {
		span.AddEvent(operation(data.SQL))
	}
}

// TraceBatchEnd implements pgx.BatchTracer.
func (t *PgxTracer) TraceBatchEnd(ctx context.Context, _ *pgx.Conn, data pgx.TraceBatchEndData) {
	t.end(ctx, data.Err, nil)
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
