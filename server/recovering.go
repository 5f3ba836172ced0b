package server

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"

	"better-compute.dev/compute/apierr"
	"better-compute.dev/compute/gen/go/bettercompute/compute/v1/errcode"
)

// recovering is the link that turns a panic of the rest of the call into INTERNAL for its
// caller and keeps the replica serving. It is the chain's one recovery.
func recovering(log *slog.Logger) link {
	return func(ctx context.Context, call callInfo, next func(context.Context) error) (err error) {
		defer func() {
			if p := recover(); p != nil {
				err = panicked(ctx, log, call.procedure, p)
			}
		}()
		return next(ctx)
	}
}

// panicked logs a panic of the call to procedure and returns the INTERNAL its caller gets. The
// panic value is logged, not returned: it may quote anything the handler held.
func panicked(ctx context.Context, log *slog.Logger, procedure string, p any) error {
	log.ErrorContext(ctx, "handler panicked", "procedure", procedure, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
	return &apierr.Error{Code: errcode.Internal, Message: "internal error"}
}
