package server

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/genproto/googleapis/rpc/errdetails"

	"better-compute.dev/compute/apierr"
	"better-compute.dev/compute/gen/go/bettercompute/compute/v1/errcode"
	"better-compute.dev/compute/requestid"
)

// observer records calls' outcomes: the RPC metrics and log lines.
type observer struct {
	log     *slog.Logger
	metrics *metrics
}

// observing is the link that records every call's outcome, as its caller got it.
func observing(o *observer) link {
	return func(ctx context.Context, call callInfo, next func(context.Context) error) (err error) {
		start := time.Now()
		defer func() { o.observe(ctx, call.procedure, start, err) }()
		return next(ctx)
	}
}

// observe records the call's outcome. Only the procedure, code and duration are logged: never the
// request, whose fields may carry tokens or keys.
func (o *observer) observe(ctx context.Context, procedure string, start time.Time, err error) {
	code := "ok"
	reason := ""
	if err != nil {
		code = connect.CodeOf(err).String()
		reason = reasonOf(err)
	}
	elapsed := time.Since(start)
	o.metrics.observe(procedure, code, elapsed)
	level := slog.LevelInfo
	switch code {
	case connect.CodeInternal.String(), connect.CodeUnknown.String():
		level = slog.LevelError
	case connect.CodeCanceled.String(), connect.CodeDeadlineExceeded.String():
		reason = "endedByClient"
	}
	o.log.Log(ctx, level, "rpc", "procedure", procedure, "code", code, "reason", reason, "duration_ms", float64(elapsed.Microseconds())/1000,
		"requestId", requestid.FromContext(ctx))
}

// logCause logs the hidden cause of an INTERNAL error: the caller sees only "internal error".
// Causes are store and engine errors, which never quote request values (store strips DETAIL).
func (o *observer) logCause(ctx context.Context, procedure string, err error) {
	var pe *apierr.Error
	if errors.As(err, &pe) && pe.Code == errcode.Internal && pe.Cause != nil {
		o.log.ErrorContext(ctx, "internal error", "procedure", procedure, "cause", pe.Cause.Error())
	}
}

// reasonOf returns the platform reason an error carries in its ErrorInfo.
func reasonOf(err error) string {
	var ce *connect.Error
	if !errors.As(err, &ce) {
		return ""
	}
	for _, d := range ce.Details() {
		if v, derr := d.Value(); derr == nil {
			if info, ok := v.(*errdetails.ErrorInfo); ok {
				return info.GetReason()
			}
		}
	}
	return ""
}
