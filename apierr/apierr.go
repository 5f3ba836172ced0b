// Package apierr is the platform's error vocabulary: every failure a caller sees carries one of
// errors.proto's reasons (ErrorReason): the seed's INVALID_INPUT, NOT_FOUND, ACCESS_DENIED,
// QUOTA_EXCEEDED, INVALID_STATE, or UNAUTHENTICATED, UNAVAILABLE, INTERNAL. core returns these;
// server turns them into a Connect code plus google.rpc.ErrorInfo, and into a plain JSON body on
// the JSON mapping.
package apierr

import (
	"errors"
	"fmt"
	"strings"

	v1 "better-compute.dev/compute/gen/go/bettercompute/compute/v1"
)

// Code is a platform reason as google.rpc.ErrorInfo.reason spells it: an ErrorReason value's name
// without the ERROR_REASON_ prefix.
type Code string

// The platform reasons, named from the generated ErrorReason so that errors.proto stays their
// one definition.
var (
	InvalidInput    = ReasonCode(v1.ErrorReason_ERROR_REASON_INVALID_INPUT)
	NotFound        = ReasonCode(v1.ErrorReason_ERROR_REASON_NOT_FOUND)
	AccessDenied    = ReasonCode(v1.ErrorReason_ERROR_REASON_ACCESS_DENIED)
	QuotaExceeded   = ReasonCode(v1.ErrorReason_ERROR_REASON_QUOTA_EXCEEDED)
	InvalidState    = ReasonCode(v1.ErrorReason_ERROR_REASON_INVALID_STATE)
	Unauthenticated = ReasonCode(v1.ErrorReason_ERROR_REASON_UNAUTHENTICATED)
	Unavailable     = ReasonCode(v1.ErrorReason_ERROR_REASON_UNAVAILABLE)
	Internal        = ReasonCode(v1.ErrorReason_ERROR_REASON_INTERNAL)
)

// ReasonCode is the code of an ErrorReason ("" for ERROR_REASON_UNSPECIFIED, which is never sent).
func ReasonCode(r v1.ErrorReason) Code {
	if r == v1.ErrorReason_ERROR_REASON_UNSPECIFIED {
		return ""
	}
	return Code(strings.TrimPrefix(r.String(), "ERROR_REASON_"))
}

// Codes lists every platform reason in errors.proto's order.
func Codes() []Code {
	values := v1.ErrorReason(0).Descriptor().Values()
	out := make([]Code, 0, values.Len())
	for i := range values.Len() {
		if c := ReasonCode(v1.ErrorReason(values.Get(i).Number())); c != "" {
			out = append(out, c)
		}
	}
	return out
}

// Domain is google.rpc.ErrorInfo.domain for every platform error.
const Domain = "compute.better-compute.dev"

// Error is a platform error. Message is safe to show the caller; Cause (kept for logs) is not.
type Error struct {
	Code        Code
	Message     string
	Field       string // INVALID_INPUT: the offending field path in the seed's camelCase (e.g. forwarding[0].entryPort)
	StateReason string // INVALID_STATE: why (e.g. inUse)
	Cause       error
}

func (e *Error) Error() string {
	msg := string(e.Code) + ": " + e.Message
	if e.Field != "" {
		msg += " (field " + e.Field + ")"
	}
	return msg
}

// Unwrap exposes the cause to errors.Is / errors.As.
func (e *Error) Unwrap() error { return e.Cause }

// Invalid is INVALID_INPUT naming a field.
func Invalid(field, format string, args ...any) *Error {
	return &Error{Code: InvalidInput, Field: field, Message: fmt.Sprintf(format, args...)}
}

// NotFoundf is NOT_FOUND.
func NotFoundf(format string, args ...any) *Error {
	return &Error{Code: NotFound, Message: fmt.Sprintf(format, args...)}
}

// Denied is ACCESS_DENIED.
func Denied(format string, args ...any) *Error {
	return &Error{Code: AccessDenied, Message: fmt.Sprintf(format, args...)}
}

// Quota is QUOTA_EXCEEDED.
func Quota(format string, args ...any) *Error {
	return &Error{Code: QuotaExceeded, Message: fmt.Sprintf(format, args...)}
}

// State is INVALID_STATE with a reason.
func State(reason, format string, args ...any) *Error {
	return &Error{Code: InvalidState, StateReason: reason, Message: fmt.Sprintf(format, args...)}
}

// InternalErr hides cause behind a generic message.
func InternalErr(cause error) *Error {
	return &Error{Code: Internal, Message: "internal error", Cause: cause}
}

// UnavailableErr reports a dependency that could not answer; the call was refused.
func UnavailableErr(what string, cause error) *Error {
	return &Error{Code: Unavailable, Message: what + " is unavailable; the call was refused", Cause: cause}
}

// From returns err as a platform error; anything that is not one becomes INTERNAL.
func From(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return InternalErr(err)
}

// CodeOf returns the platform code of err ("" for nil).
func CodeOf(err error) Code {
	if err == nil {
		return ""
	}
	return From(err).Code
}
