package server

import (
	"context"
	"errors"
	"fmt"
	"google.golang.org/protobuf/types/known/anypb"
	"strings"
	"time"

	"buf.build/go/protovalidate"
	"connectrpc.com/connect"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/durationpb"

	"better-compute.dev/compute/apierr"
	"better-compute.dev/compute/requestid"
	sdk "better-compute.dev/compute/sdk/go"
)

// connectCode maps a platform reason onto the Connect (and gRPC) code.
var connectCode = map[apierr.Code]connect.Code{
	apierr.InvalidInput:    connect.CodeInvalidArgument,
	apierr.NotFound:        connect.CodeNotFound,
	apierr.AccessDenied:    connect.CodePermissionDenied,
	apierr.QuotaExceeded:   connect.CodeResourceExhausted,
	apierr.InvalidState:    connect.CodeFailedPrecondition,
	apierr.Unauthenticated: connect.CodeUnauthenticated,
	apierr.Unavailable:     connect.CodeUnavailable,
	apierr.Internal:        connect.CodeInternal,
}

// toConnect turns any error a handler returns into a Connect error carrying
// google.rpc.ErrorInfo{reason, domain, metadata}. Errors that are not platform errors become
// INTERNAL with a message that reveals nothing.
func toConnect(err error) *connect.Error {
	if err == nil {
		return nil
	}
	var ce *connect.Error
	if errors.As(err, &ce) {
		return ce
	}
	pe := apierr.From(err)
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
	if pe.Code == apierr.Unavailable {
		// The retry hint: a fault of the database or the engine is usually over within a second.
		if d, derr := connect.NewErrorDetail(&errdetails.RetryInfo{RetryDelay: durationpb.New(RetryAfter)}); derr == nil {
			out.AddDetail(d)
		}
	}
	return out
}

// RetryAfter is the pause an UNAVAILABLE answer suggests before retrying (RetryInfo on Connect
// and gRPC, Retry-After on the JSON mapping).
const RetryAfter = time.Second

// validationError turns protovalidate violations into INVALID_INPUT naming the first field in the
// seed's camelCase spelling (forwarding[0].entryPort); every violation goes along as
// buf.validate.Violations for clients that want them all.
func validationError(err error) *connect.Error {
	var ve *protovalidate.ValidationError
	if !errors.As(err, &ve) || len(ve.Violations) == 0 {
		return toConnect(apierr.Invalid("", "the request is not valid: %v", err))
	}
	msgs := make([]string, 0, min(len(ve.Violations), maxViolationsInMessage)+1)
	var first string
	for i, v := range ve.Violations {
		path := sdk.ViolationField(v.Proto)
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
	ce := toConnect(apierr.Invalid(first, "%s", strings.Join(msgs, "; ")))
	if d, derr := connect.NewErrorDetail(ve.ToProto()); derr == nil {
		ce.AddDetail(d)
	}
	return ce
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
