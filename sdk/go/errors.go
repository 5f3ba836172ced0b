package sdk

import (
	"errors"

	"connectrpc.com/connect"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
)

// Code is a platform reason, as google.rpc.ErrorInfo.reason carries it (errors.proto lists them).
type Code string

// The platform reasons a call can fail with.
const (
	InvalidInput    Code = "INVALID_INPUT"
	NotFound        Code = "NOT_FOUND"
	AccessDenied    Code = "ACCESS_DENIED"
	QuotaExceeded   Code = "QUOTA_EXCEEDED"
	InvalidState    Code = "INVALID_STATE"
	Unauthenticated Code = "UNAUTHENTICATED"
	Unavailable     Code = "UNAVAILABLE"
	Internal        Code = "INTERNAL"
)

// Domain of the platform's google.rpc.ErrorInfo.
const Domain = "compute.better-compute.dev"

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
