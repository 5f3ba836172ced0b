package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"time"

	"buf.build/go/protovalidate"
	"connectrpc.com/connect"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/protobuf/proto"

	"better-compute.dev/compute/apierr"
	"better-compute.dev/compute/core"
	"better-compute.dev/compute/requestid"
)

// interceptor runs on every Connect, gRPC and gRPC-Web call (and so on the JSON mapping, which
// is served by the same handlers): metrics and logs, validation, authentication, then the handler,
// whose error becomes a platform error.
type interceptor struct {
	svc       *core.Service
	validator protovalidate.Validator
	log       *slog.Logger
	metrics   *metrics
}

func (i *interceptor) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (resp connect.AnyResponse, err error) {
		start := time.Now()
		defer func() { i.observe(ctx, req.Spec().Procedure, start, err) }()
		defer func() {
			if p := recover(); p != nil {
				resp, err = nil, i.recovered(ctx, req.Spec(), nil, p)
			}
			if err != nil {
				err = withRequestID(ctx, err)
			}
		}()
		ctx, err = i.admit(ctx, req.Header().Get("Authorization"), req.Any())
		if err != nil {
			return nil, endedByClient(ctx, err)
		}
		resp, err = next(ctx, req)
		if err != nil {
			if gone := endedByClient(ctx, nil); gone != nil {
				return nil, gone
			}
			i.logCause(ctx, req.Spec().Procedure, err)
			return nil, toConnect(err)
		}
		return resp, nil
	}
}

func (i *interceptor) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return next
}

func (i *interceptor) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return func(ctx context.Context, conn connect.StreamingHandlerConn) (err error) {
		start := time.Now()
		defer func() { i.observe(ctx, conn.Spec().Procedure, start, err) }()
		defer func() {
			if p := recover(); p != nil {
				err = i.recovered(ctx, conn.Spec(), nil, p)
			}
			if err != nil {
				err = withRequestID(ctx, err)
			}
		}()
		// Server streams carry one request: authenticate here, validate it in the handler.
		ctx, err = i.admit(ctx, conn.RequestHeader().Get("Authorization"), nil)
		if err != nil {
			return endedByClient(ctx, err)
		}
		if err = next(ctx, conn); err != nil {
			if gone := endedByClient(ctx, nil); gone != nil {
				return gone
			}
			i.logCause(ctx, conn.Spec().Procedure, err)
			return toConnect(err)
		}
		return nil
	}
}

// deadlineSlack is how close to its deadline a client's cancel is read as that deadline.
const deadlineSlack = 100 * time.Millisecond

// endedByClient is the answer to a call whose client ended it while it ran: its request's
// context was canceled (the client went away or canceled) or passed the deadline the client
// set (Connect-Timeout-Ms, grpc-timeout). Whatever the handler's error says then (a store call
// cut short reads "context canceled") is a consequence, not a fault of the replica: the call is
// CANCELED or DEADLINE_EXCEEDED, which the log and bc_rpc_calls_total show apart from INTERNAL,
// and its cause is not logged as an internal error. When the client did not end it, err (nil
// included) is returned unchanged. The server sets no deadline of its own on a call.
func endedByClient(ctx context.Context, err error) error {
	cause := ctx.Err()
	if errors.Is(cause, context.Canceled) {
		// A client ends its call at its own deadline, and its cancel can reach the server a moment
		// before the server's copy of that deadline fires: a cancel that close to the deadline
		// the client sent is the deadline.
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < deadlineSlack {
			cause = context.DeadlineExceeded
		}
	}
	switch {
	case errors.Is(cause, context.DeadlineExceeded):
		return connect.NewError(connect.CodeDeadlineExceeded, errors.New("the client's deadline passed before the call ended"))
	case errors.Is(cause, context.Canceled):
		return connect.NewError(connect.CodeCanceled, errors.New("the client ended the call"))
	}
	return err
}

// admit validates the request and makes sure it has a caller. authenticateFirst has resolved the
// bearer token before the body was read; a handler reached another way (a test mounting the
// handlers alone) authenticates here, still before validating.
func (i *interceptor) admit(ctx context.Context, authorization string, msg any) (context.Context, error) {
	if _, ok := core.CallerFrom(ctx); !ok {
		var err error
		if ctx, err = authenticate(ctx, i.svc, authorization); err != nil {
			return ctx, toConnect(err)
		}
	}
	if m, ok := msg.(proto.Message); ok {
		if err := i.validateMessage(m); err != nil {
			return ctx, err
		}
	}
	return ctx, nil
}

// observe records the call's outcome. Only the procedure, code and duration are logged: never the
// request, whose fields may carry tokens or keys.
func (i *interceptor) observe(ctx context.Context, procedure string, start time.Time, err error) {
	code := "ok"
	reason := ""
	if err != nil {
		code = connect.CodeOf(err).String()
		reason = reasonOf(err)
	}
	elapsed := time.Since(start)
	i.metrics.observe(procedure, code, elapsed)
	level := slog.LevelInfo
	switch code {
	case connect.CodeInternal.String(), connect.CodeUnknown.String():
		level = slog.LevelError
	case connect.CodeCanceled.String(), connect.CodeDeadlineExceeded.String():
		reason = "endedByClient"
	}
	i.log.Log(ctx, level, "rpc", "procedure", procedure, "code", code, "reason", reason, "duration_ms", float64(elapsed.Microseconds())/1000,
		"requestId", requestid.FromContext(ctx))
}

// logCause logs the hidden cause of an INTERNAL error: the caller sees only "internal error".
// Causes are store and engine errors, which never quote request values (store strips DETAIL).
func (i *interceptor) logCause(ctx context.Context, procedure string, err error) {
	var pe *apierr.Error
	if errors.As(err, &pe) && pe.Code == apierr.Internal && pe.Cause != nil {
		i.log.ErrorContext(ctx, "internal error", "procedure", procedure, "cause", pe.Cause.Error())
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

// validateMessage validates a message outside the interceptor (the stream's request).
func (i *interceptor) validateMessage(m proto.Message) error {
	if path := nulField(m.ProtoReflect()); path != "" {
		return toConnect(apierr.Invalid(path, "%s must not contain the NUL character (U+0000)", path))
	}
	if err := i.validator.Validate(m); err != nil {
		return validationError(err)
	}
	return nil
}

// recovered turns a handler's panic into INTERNAL for its caller and keeps the replica serving.
// The panic value is logged, not returned: it may quote anything the handler held.
func (i *interceptor) recovered(ctx context.Context, spec connect.Spec, _ http.Header, p any) error {
	return toConnect(i.panicked(ctx, spec.Procedure, p))
}

// panicked logs a panic of the call to procedure and returns the INTERNAL its caller gets.
func (i *interceptor) panicked(ctx context.Context, procedure string, p any) error {
	i.log.ErrorContext(ctx, "handler panicked", "procedure", procedure, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
	return &apierr.Error{Code: apierr.Internal, Message: "internal error"}
}
