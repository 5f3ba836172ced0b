package server

import (
	"context"

	"buf.build/go/protovalidate"
	"google.golang.org/protobuf/proto"

	"better-compute.dev/compute/apierr"
)

// requestValidator judges a request against its schema's rules (and refuses NUL characters,
// which no database stores).
type requestValidator struct {
	validator protovalidate.Validator
}

// validating is the link that refuses a unary request that breaks its rules as INVALID_INPUT.
func validating(v *requestValidator) link {
	return func(ctx context.Context, call callInfo, next func(context.Context) error) error {
		if m, ok := call.msg.(proto.Message); ok {
			if err := v.check(m); err != nil {
				return err
			}
		}
		return next(ctx)
	}
}

// validateMessage validates a request outside the chain (a stream's request, the join's), in
// Connect's terms.
func (v *requestValidator) validateMessage(m proto.Message) error {
	if err := v.check(m); err != nil {
		return toConnect(err)
	}
	return nil
}

// check returns the platform error of a request that breaks a rule, nil for a valid one.
func (v *requestValidator) check(m proto.Message) error {
	if path := nulField(m.ProtoReflect()); path != "" {
		return apierr.Invalid(path, "%s must not contain the NUL character (U+0000)", path)
	}
	if err := v.validator.Validate(m); err != nil {
		return invalidRequestOf(m, err)
	}
	return nil
}
