package server

import (
	"context"
	"log/slog"
	"net/http"

	"buf.build/go/protovalidate"
	"connectrpc.com/connect"

	"better-compute.dev/compute/core"
)

// edge is the way into every Connect, gRPC and gRPC-Web call of the API (and so of the JSON
// mapping, which is served by the same handlers): the chain of interceptors below, and the parts
// of it that code outside the chain uses too (authenticateFirst, the join handler, which has no
// bearer token, and the handlers of streams, which validate their one request themselves).
type edge struct {
	*observer
	*requestValidator
	base *core.Base
	log  *slog.Logger
}

func newEdge(base *core.Base, validator protovalidate.Validator, log *slog.Logger, m *metrics) *edge {
	return &edge{observer: &observer{log: log, metrics: m}, requestValidator: &requestValidator{validator}, base: base, log: log}
}

// interceptors is the chain every authenticated call passes, outermost first. Each link has one
// job; the order is what makes them right:
//
//  1. observing records the outcome the caller got (metrics and one log line), so it sits
//     outside everything that can change that outcome.
//  2. stampingRequestID puts the request's id into the platform ErrorInfo of any error.
//  3. mappingErrors turns a platform error into a Connect code plus ErrorInfo (and hands it to
//     the JSON mapping as it is), logging an INTERNAL error's hidden cause.
//  4. endedByClientWins answers CANCELED or DEADLINE_EXCEEDED when the client ended the call,
//     whatever went wrong below because of it (and then no cause is logged).
//  5. recovering turns a panic below into INTERNAL and keeps the replica serving.
//  6. authenticating makes sure the call has a caller (authenticateFirst usually found it).
//  7. validating refuses a unary request that breaks its schema's rules, after authentication:
//     an anonymous caller learns nothing about the API. A stream's handler validates its request.
func (e *edge) interceptors() []connect.Interceptor {
	return []connect.Interceptor{
		observing(e.observer),
		stampingRequestID(),
		mappingErrors(e.observer),
		endedByClientWins(),
		recovering(e.log),
		authenticating(e.base),
		validating(e.requestValidator),
	}
}

// link is one interceptor of the chain: a function around the rest of the call (next), the same
// for unary calls and streams.
type link func(ctx context.Context, call callInfo, next func(context.Context) error) error

// callInfo is what a link may read of a call.
type callInfo struct {
	procedure string
	header    http.Header
	msg       any // a unary call's request; nil on a stream, whose handler reads its request itself
}

func (l link) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		var resp connect.AnyResponse
		err := l(ctx, callInfo{procedure: req.Spec().Procedure, header: req.Header(), msg: req.Any()}, func(ctx context.Context) (err error) {
			resp, err = next(ctx, req)
			return err
		})
		if err != nil {
			return nil, err
		}
		return resp, nil
	}
}

func (l link) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return func(ctx context.Context, conn connect.StreamingHandlerConn) error {
		return l(ctx, callInfo{procedure: conn.Spec().Procedure, header: conn.RequestHeader()}, func(ctx context.Context) error {
			return next(ctx, conn)
		})
	}
}

// WrapStreamingClient leaves clients alone: the chain is mounted on handlers only.
func (l link) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return next
}
