package server

import (
	"time"

	"errors"
	"fmt"
	"google.golang.org/protobuf/types/known/durationpb"
	"strings"

	"buf.build/go/protovalidate"
	"connectrpc.com/connect"
	"google.golang.org/genproto/googleapis/rpc/errdetails"

	"better-compute.dev/compute/apierr"
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
		path := violationPath(v)
		if i == 0 {
			first = path
		}
		if i == maxViolationsInMessage {
			msgs = append(msgs, fmt.Sprintf("and %d more", len(ve.Violations)-i))
			break
		}
		msgs = append(msgs, fmt.Sprintf("%s: %s", path, v.Proto.GetMessage()))
	}
	ce := toConnect(apierr.Invalid(first, "%s", strings.Join(msgs, "; ")))
	if d, derr := connect.NewErrorDetail(ve.ToProto()); derr == nil {
		ce.AddDetail(d)
	}
	return ce
}

// maxViolationsInMessage bounds the message: a request with thousands of bad items gets a short
// answer (every violation still travels as buf.validate.Violations).
const maxViolationsInMessage = 10

// violationPath renders a violation's field path in JSON names. A message-level rule has no
// path of its own: its id starts with the field it is about ("targets.scope" -> targets).
func violationPath(v *protovalidate.Violation) string {
	var b strings.Builder
	for _, el := range v.Proto.GetField().GetElements() {
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(lowerCamel(el.GetFieldName()))
		switch {
		case el.HasIndex():
			fmt.Fprintf(&b, "[%d]", el.GetIndex())
		case el.HasStringKey():
			fmt.Fprintf(&b, "[%q]", el.GetStringKey())
		}
	}
	rule := v.Proto.GetRuleId()
	if b.Len() == 0 {
		if i := strings.IndexByte(rule, '.'); i > 0 {
			return rule[:i]
		}
		return rule
	}
	return b.String()
}

// lowerCamel is protojson's JSON name of a proto field name (entry_port -> entryPort).
func lowerCamel(s string) string {
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
