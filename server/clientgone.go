package server

import (
	"context"
	"errors"
	"time"

	"connectrpc.com/connect"
)

// endedByClientWins is the link that answers a call its client ended with CANCELED or
// DEADLINE_EXCEEDED (endedByClient), whatever the rest of the call returned because of it.
func endedByClientWins() link {
	return func(ctx context.Context, _ callInfo, next func(context.Context) error) error {
		if err := next(ctx); err != nil {
			if gone := endedByClient(ctx, nil); gone != nil {
				return gone
			}
			return err
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
