package sdk

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"buf.build/gen/go/bufbuild/protovalidate/protocolbuffers/go/buf/validate"
	"connectrpc.com/connect"
	"google.golang.org/genproto/googleapis/rpc/errdetails"

	"better-compute.dev/compute/gen/go/bettercompute/compute/v1/errcode"
)

// Code is a platform reason (errcode: generated from errors.proto's ErrorReason).
type Code = errcode.Code

// The platform reasons, errors.proto's one definition.
const (
	InvalidInput    = errcode.InvalidInput
	NotFound        = errcode.NotFound
	AccessDenied    = errcode.AccessDenied
	QuotaExceeded   = errcode.QuotaExceeded
	InvalidState    = errcode.InvalidState
	Unauthenticated = errcode.Unauthenticated
	Unavailable     = errcode.Unavailable
	Internal        = errcode.Internal
)

// Domain of the platform's google.rpc.ErrorInfo.
const Domain = errcode.Domain

// RequestIDHeader is the header naming a request, sent back on every answer.
const RequestIDHeader = "X-Request-Id"

// Violation is one rule a request broke.
type Violation struct {
	Field   string // the field in JSON names, e.g. forwarding[0].entryPort
	Rule    string // the rule's id, e.g. string.pattern
	Message string
}

// Error is a failed call's platform error.
type Error struct {
	Code        Code
	Message     string
	Field       string      // INVALID_INPUT: the first offending field (forwarding[0].entryPort)
	Violations  []Violation // INVALID_INPUT: every rule the request broke, in the server's order
	StateReason string      // INVALID_STATE: why (inUse)
	RequestID   string      // the server's id of the request ("" when no answer came)
	Connect     *connect.Error
}

func (e *Error) Error() string {
	msg := string(e.Code) + ": " + e.Message
	if e.RequestID != "" {
		msg += " (request " + e.RequestID + ")"
	}
	return msg
}

// Unwrap returns the Connect error.
func (e *Error) Unwrap() error { return e.Connect }

// Temporary reports whether the same call may succeed later (UNAVAILABLE).
func (e *Error) Temporary() bool { return e.Code == Unavailable }

// ReasonForCode is the platform reason of a Connect code when an answer carries no platform
// ErrorInfo (a proxy answered, the connection failed, or the transport itself refused the
// request).
func ReasonForCode(code connect.Code) Code {
	switch code {
	case connect.CodeInvalidArgument, connect.CodeOutOfRange, connect.CodeUnimplemented:
		return InvalidInput
	case connect.CodeResourceExhausted:
		// QUOTA_EXCEEDED always carries ErrorInfo; a bare resource_exhausted is the transport's
		// message-size limit: the request was too large.
		return InvalidInput
	case connect.CodeNotFound:
		return NotFound
	case connect.CodePermissionDenied:
		return AccessDenied
	case connect.CodeFailedPrecondition:
		return InvalidState
	case connect.CodeUnauthenticated:
		return Unauthenticated
	case connect.CodeUnavailable, connect.CodeDeadlineExceeded, connect.CodeCanceled, connect.CodeAborted:
		// A server-side timeout or a connection cut: nothing says the call cannot succeed later.
		// (The caller's own cancel or deadline never gets here: see AsError.)
		return Unavailable
	}
	return Internal
}

// AsError reads the platform error out of a call's error. It answers false for what is not a
// platform failure: nil, an error of no call, or the caller's own cancel or passed deadline
// (errors.Is(err, context.Canceled) / context.DeadlineExceeded hold for those).
func AsError(err error) (*Error, bool) {
	var pe *Error
	if errors.As(err, &pe) {
		return pe, true
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return nil, false
	}
	var ce *connect.Error
	if !errors.As(err, &ce) {
		return nil, false
	}
	return fromConnect(ce), true
}

func fromConnect(ce *connect.Error) *Error {
	out := &Error{Code: ReasonForCode(ce.Code()), Message: ce.Message(), Connect: ce, RequestID: ce.Meta().Get(RequestIDHeader)}
	if out.Code == Unavailable && ce.Code() == connect.CodeUnavailable && out.Message == "" {
		out.Message = "the platform could not be reached"
	}
	for _, d := range ce.Details() {
		v, derr := d.Value()
		if derr != nil {
			continue
		}
		switch v := v.(type) {
		case *errdetails.ErrorInfo:
			if v.GetDomain() == Domain && v.GetReason() != "" {
				md := v.GetMetadata()
				out.Code, out.Field, out.StateReason = Code(v.GetReason()), md["field"], md["stateReason"]
				if id := md["requestId"]; id != "" {
					out.RequestID = id
				}
			}
		case *validate.Violations:
			for _, vi := range v.GetViolations() {
				out.Violations = append(out.Violations, Violation{Field: ViolationField(vi), Rule: vi.GetRuleId(), Message: vi.GetMessage()})
			}
		}
	}
	return out
}

// ViolationField renders a violation's field path in JSON names (forwarding[0].entryPort), as
// the server names the field of INVALID_INPUT. A message-level rule has no path of its own: its
// id starts with the field it is about ("targets.exactly_one" -> targets).
func ViolationField(v *validate.Violation) string {
	var b strings.Builder
	for _, el := range v.GetField().GetElements() {
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(jsonName(el.GetFieldName()))
		switch {
		case el.HasIndex():
			fmt.Fprintf(&b, "[%d]", el.GetIndex())
		case el.HasStringKey():
			fmt.Fprintf(&b, "[%q]", el.GetStringKey())
		case el.HasIntKey():
			fmt.Fprintf(&b, "[%d]", el.GetIntKey())
		case el.HasUintKey():
			fmt.Fprintf(&b, "[%d]", el.GetUintKey())
		case el.HasBoolKey():
			fmt.Fprintf(&b, "[%t]", el.GetBoolKey())
		}
	}
	if b.Len() == 0 {
		rule := v.GetRuleId()
		if i := strings.IndexByte(rule, '.'); i > 0 {
			return rule[:i]
		}
		return rule
	}
	return b.String()
}

// jsonName is protojson's JSON name of a proto field name (entry_port -> entryPort).
func jsonName(s string) string {
	var b strings.Builder
	up := false
	for _, r := range s {
		if r == '_' {
			up = true
			continue
		}
		if up && r >= 'a' && r <= 'z' {
			r -= 'a' - 'A'
		}
		up = false
		b.WriteRune(r)
	}
	return b.String()
}

// callerError is a call the caller's own context ended: it is the context's error (errors.Is
// with context.Canceled or context.DeadlineExceeded holds) and still unwraps to the Connect error.
type callerError struct {
	ctxErr error
	ce     *connect.Error
}

func (e *callerError) Error() string   { return e.ctxErr.Error() + ": " + e.ce.Error() }
func (e *callerError) Unwrap() []error { return []error{e.ctxErr, e.ce} }

// translate turns a failed call's error into what the SDK returns: the caller's cancel or deadline
// as a context error, anything else as *Error.
func translate(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	var pe *Error
	if errors.As(err, &pe) {
		return err
	}
	var ce *connect.Error
	if !errors.As(err, &ce) {
		return err
	}
	if cerr := ctx.Err(); cerr != nil && !hasPlatformInfo(ce) {
		if errors.Is(err, cerr) {
			return err
		}
		return &callerError{ctxErr: cerr, ce: ce}
	}
	if (ce.Code() == connect.CodeCanceled || ce.Code() == connect.CodeDeadlineExceeded) && !hasPlatformInfo(ce) {
		// The server saw the caller's deadline (sent along as a timeout header) pass a moment
		// before the caller did: still the caller's.
		if _, ok := ctx.Deadline(); ok && ce.Code() == connect.CodeDeadlineExceeded {
			return &callerError{ctxErr: context.DeadlineExceeded, ce: ce}
		}
	}
	return fromConnect(ce)
}

func hasPlatformInfo(ce *connect.Error) bool {
	for _, d := range ce.Details() {
		if v, err := d.Value(); err == nil {
			if info, ok := v.(*errdetails.ErrorInfo); ok && info.GetDomain() == Domain {
				return true
			}
		}
	}
	return false
}
