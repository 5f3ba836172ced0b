package sdk

import (
	"errors"

	"connectrpc.com/connect"
	"google.golang.org/genproto/googleapis/rpc/errdetails"

	"better-compute.dev/compute/apierr"
)

// Code is a platform reason; the vocabulary is the server's own (package apierr).
type Code = apierr.Code

// The platform reasons a call can fail with.
const (
	InvalidInput    = apierr.InvalidInput
	NotFound        = apierr.NotFound
	AccessDenied    = apierr.AccessDenied
	QuotaExceeded   = apierr.QuotaExceeded
	InvalidState    = apierr.InvalidState
	Unauthenticated = apierr.Unauthenticated
	Unavailable     = apierr.Unavailable
	Internal        = apierr.Internal
)

// Domain of the platform's google.rpc.ErrorInfo.
const Domain = apierr.Domain

// Error is a failed call's platform error.
type Error struct {
	Code        Code
	Message     string
	Field       string // INVALID_INPUT: the first offending field (forwarding[0].entryPort)
	StateReason string // INVALID_STATE: why (inUse)
	Connect     *connect.Error
}

func (e *Error) Error() string { return string(e.Code) + ": " + e.Message }

// Unwrap returns the Connect error.
func (e *Error) Unwrap() error { return e.Connect }

// fallback maps a Connect code when the server sent no ErrorInfo (e.g. a transport failure).
var fallback = map[connect.Code]Code{
	connect.CodeInvalidArgument: InvalidInput, connect.CodeNotFound: NotFound, connect.CodePermissionDenied: AccessDenied,
	// QUOTA_EXCEEDED always carries ErrorInfo; a bare resource_exhausted is the transport's
	// message-size limit (the request was too large).
	connect.CodeResourceExhausted: InvalidInput, connect.CodeFailedPrecondition: InvalidState,
	connect.CodeUnauthenticated: Unauthenticated, connect.CodeUnavailable: Unavailable,
}

// AsError reads the platform error out of a call's error.
func AsError(err error) (*Error, bool) {
	var ce *connect.Error
	if !errors.As(err, &ce) {
		return nil, false
	}
	out := &Error{Code: Internal, Message: ce.Message(), Connect: ce}
	if code, ok := fallback[ce.Code()]; ok {
		out.Code = code
	}
	for _, d := range ce.Details() {
		v, derr := d.Value()
		if info, ok := v.(*errdetails.ErrorInfo); derr == nil && ok && info.GetDomain() == Domain {
			out.Code, out.Field, out.StateReason = Code(info.GetReason()), info.GetMetadata()["field"], info.GetMetadata()["stateReason"]
		}
	}
	return out, true
}
