// Package apierr is the platform's error type: every failure a caller sees carries one of
// errors.proto's reasons (the generated errcode package names them: the seed's INVALID_INPUT,
// NOT_FOUND, ACCESS_DENIED, QUOTA_EXCEEDED, INVALID_STATE, or UNAUTHENTICATED, UNAVAILABLE,
// INTERNAL), with the constructors core uses (Invalid, NotFoundf, ...). core returns these;
// server turns them into a Connect code plus google.rpc.ErrorInfo, and into a plain JSON body on
// the JSON mapping.
package apierr

import (
	"errors"
	"fmt"

	v1 "better-compute.dev/compute/gen/go/bettercompute/compute/v1"
	"better-compute.dev/compute/gen/go/bettercompute/compute/v1/errcode"
)

// Code is a platform reason (errcode: generated from errors.proto's ErrorReason).
type Code = errcode.Code

// Codes lists every platform reason in errors.proto's order.
func Codes() []Code { return errcode.All }

// ReasonCode is the code of an ErrorReason ("" for ERROR_REASON_UNSPECIFIED, which is never sent).
func ReasonCode(r v1.ErrorReason) Code { return errcode.FromReason(int32(r)) }

// Domain is google.rpc.ErrorInfo.domain for every platform error.
const Domain = errcode.Domain

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
	return &Error{Code: errcode.InvalidInput, Field: field, Message: fmt.Sprintf(format, args...)}
}

// NotFoundf is NOT_FOUND.
func NotFoundf(format string, args ...any) *Error {
	return &Error{Code: errcode.NotFound, Message: fmt.Sprintf(format, args...)}
}

// Denied is ACCESS_DENIED.
func Denied(format string, args ...any) *Error {
	return &Error{Code: errcode.AccessDenied, Message: fmt.Sprintf(format, args...)}
}

// Quota is QUOTA_EXCEEDED.
func Quota(format string, args ...any) *Error {
	return &Error{Code: errcode.QuotaExceeded, Message: fmt.Sprintf(format, args...)}
}

// State is INVALID_STATE with a reason.
func State(reason, format string, args ...any) *Error {
	return &Error{Code: errcode.InvalidState, StateReason: reason, Message: fmt.Sprintf(format, args...)}
}

// InternalErr hides cause behind a generic message.
func InternalErr(cause error) *Error {
	return &Error{Code: errcode.Internal, Message: "internal error", Cause: cause}
}

// UnavailableErr reports a dependency that could not answer; the call was refused.
func UnavailableErr(what string, cause error) *Error {
	return &Error{Code: errcode.Unavailable, Message: what + " is unavailable; the call was refused", Cause: cause}
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
