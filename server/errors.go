package server

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"buf.build/gen/go/bufbuild/protovalidate/protocolbuffers/go/buf/validate"
	"buf.build/go/protovalidate"
	"connectrpc.com/connect"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"

	"better-compute.dev/compute/apierr"
	"better-compute.dev/compute/gen/go/bettercompute/compute/v1/errcode"
	"better-compute.dev/compute/requestid"
)

// connectCode maps a platform reason onto the Connect (and gRPC) code.
var connectCode = map[apierr.Code]connect.Code{
	errcode.InvalidInput:    connect.CodeInvalidArgument,
	errcode.NotFound:        connect.CodeNotFound,
	errcode.AccessDenied:    connect.CodePermissionDenied,
	errcode.QuotaExceeded:   connect.CodeResourceExhausted,
	errcode.InvalidState:    connect.CodeFailedPrecondition,
	errcode.Unauthenticated: connect.CodeUnauthenticated,
	errcode.Unavailable:     connect.CodeUnavailable,
	errcode.Internal:        connect.CodeInternal,
}

// mappingErrors is the link that turns the error of the rest of the call into a Connect error
// (toConnect), logging an INTERNAL error's hidden cause. On the JSON mapping it also hands the
// platform error itself to jsonMapping, which writes it as the body.
func mappingErrors(o *observer) link {
	return func(ctx context.Context, call callInfo, next func(context.Context) error) error {
		err := next(ctx)
		if err == nil {
			return nil
		}
		o.logCause(ctx, call.procedure, err)
		if pe, ok := platformError(err); ok {
			answerJSON(ctx, pe)
		}
		return toConnect(err)
	}
}

// stampingRequestID is the link that names the request in the platform ErrorInfo of any error
// (withRequestID).
func stampingRequestID() link {
	return func(ctx context.Context, _ callInfo, next func(context.Context) error) error {
		if err := next(ctx); err != nil {
			return withRequestID(ctx, err)
		}
		return nil
	}
}

// platformError returns err as the platform error it becomes, and false for an error that is
// already Connect's (the client ended the call, or a handler translated its own).
func platformError(err error) (*apierr.Error, bool) {
	var ce *connect.Error
	if errors.As(err, &ce) {
		return nil, false
	}
	return apierr.From(err), true
}

// toConnect turns any error a handler returns into a Connect error carrying
// google.rpc.ErrorInfo{reason, domain, metadata}. Errors that are not platform errors become
// INTERNAL with a message that reveals nothing.
func toConnect(err error) *connect.Error {
	if err == nil {
		return nil
	}
	pe, ok := platformError(err)
	if !ok {
		var ce *connect.Error
		errors.As(err, &ce)
		return ce
	}
	out := connect.NewError(connectCode[pe.Code], errors.New(pe.Message))
	md := map[string]string{}
	if pe.Field != "" {
		md["field"] = pe.Field
	}
	if pe.StateReason != "" {
		md["stateReason"] = pe.StateReason
	}
	if d, derr := connect.NewErrorDetail(&errdetails.ErrorInfo{Reason: string(pe.Code), Domain: apierr.Domain, Metadata: md}); derr == nil {
		out.AddDetail(d)
	}
	if pe.Code == errcode.Unavailable {
		// The retry hint: a fault of the database or the engine is usually over within a second.
		if d, derr := connect.NewErrorDetail(&errdetails.RetryInfo{RetryDelay: durationpb.New(RetryAfter)}); derr == nil {
			out.AddDetail(d)
		}
	}
	var ir *invalidRequest
	if errors.As(err, &ir) {
		if d, derr := connect.NewErrorDetail(ir.violations); derr == nil {
			out.AddDetail(d)
		}
	}
	return out
}

// RetryAfter is the pause an UNAVAILABLE answer suggests before retrying (RetryInfo on Connect
// and gRPC, Retry-After on the JSON mapping).
const RetryAfter = time.Second

// invalidRequest is INVALID_INPUT for a request that broke its schema's rules: the platform error
// names the first field, and every violation goes along to Connect and gRPC clients as
// buf.validate.Violations.
type invalidRequest struct {
	platform   *apierr.Error
	violations *validate.Violations
}

func (e *invalidRequest) Error() string { return e.platform.Error() }
func (e *invalidRequest) Unwrap() error { return e.platform }

// invalidRequestOf turns protovalidate's verdict on m into INVALID_INPUT naming the first field in
// the seed's camelCase spelling (forwarding[0].entryPort).
func invalidRequestOf(m proto.Message, err error) error {
	var ve *protovalidate.ValidationError
	if !errors.As(err, &ve) || len(ve.Violations) == 0 {
		return apierr.Invalid("", "the request is not valid: %v", err)
	}
	root := m.ProtoReflect().Descriptor()
	msgs := make([]string, 0, min(len(ve.Violations), maxViolationsInMessage)+1)
	var first string
	for i, v := range ve.Violations {
		path := violationPath(root, v.Proto)
		if i == 0 {
			first = path
		}
		if i == maxViolationsInMessage {
			msgs = append(msgs, fmt.Sprintf("and %d more", len(ve.Violations)-i))
			break
		}
		if missingString(v) {
			msgs = append(msgs, path+" is required")
			continue
		}
		msgs = append(msgs, fmt.Sprintf("%s: %s", path, v.Proto.GetMessage()))
	}
	return &invalidRequest{platform: apierr.Invalid(first, "%s", strings.Join(msgs, "; ")), violations: ve.ToProto()}
}

// violationPath names a violation's field in JSON names (forwarding[0].entryPort), walking the
// request's descriptors from root. A message-level rule has no path of its own: its id starts with
// the field it is about ("targets.exactly_one" -> targets).
func violationPath(root protoreflect.MessageDescriptor, v *validate.Violation) string {
	path := ""
	md := root
	for _, el := range v.GetField().GetElements() {
		name := el.GetFieldName()
		var fd protoreflect.FieldDescriptor
		if md != nil {
			fd = md.Fields().ByNumber(protoreflect.FieldNumber(el.GetFieldNumber()))
		}
		md = nil
		if fd != nil {
			name = fd.JSONName()
			if fd.IsMap() {
				fd = fd.MapValue()
			}
			md = fd.Message()
		}
		path = join(path, name) + subscript(el)
	}
	if path == "" {
		rule, _, _ := strings.Cut(v.GetRuleId(), ".")
		return rule
	}
	return path
}

// subscript renders a path element's list index or map key: [0], ["key"], [true].
func subscript(el *validate.FieldPathElement) string {
	switch el.WhichSubscript() {
	case validate.FieldPathElement_Index_case:
		return fmt.Sprintf("[%d]", el.GetIndex())
	case validate.FieldPathElement_StringKey_case:
		return fmt.Sprintf("[%q]", el.GetStringKey())
	case validate.FieldPathElement_IntKey_case:
		return fmt.Sprintf("[%d]", el.GetIntKey())
	case validate.FieldPathElement_UintKey_case:
		return fmt.Sprintf("[%d]", el.GetUintKey())
	case validate.FieldPathElement_BoolKey_case:
		return fmt.Sprintf("[%t]", el.GetBoolKey())
	}
	return ""
}

// missingString tells a string field that was left out from one whose value breaks a rule: an
// empty id or name fails its pattern or length rule, and "does not match regex pattern" would send
// a new user looking for what is wrong with a value they never sent.
func missingString(v *protovalidate.Violation) bool {
	fd := v.FieldDescriptor
	if fd == nil || fd.IsList() || fd.IsMap() || v.Proto.GetForKey() {
		return false
	}
	switch fd.Kind() {
	case protoreflect.StringKind:
		return v.FieldValue.IsValid() && v.FieldValue.String() == ""
	case protoreflect.BytesKind:
		return v.FieldValue.IsValid() && len(v.FieldValue.Bytes()) == 0
	}
	return false
}

// maxViolationsInMessage bounds the message: a request with thousands of bad items gets a short
// answer (every violation still travels as buf.validate.Violations).
const maxViolationsInMessage = 10

// withRequestID returns err with the request's id (package requestid) added to the platform's
// ErrorInfo metadata as "requestId", next to the reason; other details are kept as they are.
// An error without a platform ErrorInfo is returned unchanged (the X-Request-Id header still
// names the request).
func withRequestID(ctx context.Context, err error) error {
	id := requestid.FromContext(ctx)
	var ce *connect.Error
	if id == "" || !errors.As(err, &ce) {
		return err
	}
	out := connect.NewError(ce.Code(), errors.New(ce.Message()))
	stamped := false
	for _, d := range ce.Details() {
		if v, derr := d.Value(); derr == nil && !stamped {
			if info, ok := v.(*errdetails.ErrorInfo); ok && info.GetDomain() == apierr.Domain {
				info = proto.Clone(info).(*errdetails.ErrorInfo)
				if info.Metadata == nil {
					info.Metadata = map[string]string{}
				}
				info.Metadata["requestId"] = id
				// Marshalled deterministically: the metadata is a map, and two answers that say
				// the same thing must be the same bytes (a missing id and another tenant's).
				if nd, nerr := deterministicDetail(info); nerr == nil {
					out.AddDetail(nd)
					stamped = true
					continue
				}
			}
		}
		out.AddDetail(d)
	}
	if !stamped {
		return err
	}
	for k, vs := range ce.Meta() {
		for _, v := range vs {
			out.Meta().Add(k, v)
		}
	}
	return out
}

// deterministicDetail is connect.NewErrorDetail with map entries in a fixed order.
func deterministicDetail(m proto.Message) (*connect.ErrorDetail, error) {
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		return nil, err
	}
	return connect.NewErrorDetail(&anypb.Any{TypeUrl: "type.googleapis.com/" + string(m.ProtoReflect().Descriptor().FullName()), Value: b})
}
