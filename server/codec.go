package server

import (
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// strictJSON is the JSON codec of every handler: unlike Connect's default it refuses unknown
// fields, so a misspelt field ("idempotencykey") is INVALID_INPUT instead of silently ignored.
type strictJSON struct{ name string }

func (c strictJSON) Name() string { return c.name }

// Marshal writes every list and map, empty ones as [] and {}, and every plain field with its
// value, zero included, so a client reads `"loadBalancers": []` from an empty list (`jq
// '.loadBalancers[]'` works) instead of a missing key. Unset messages, oneofs and optional fields
// stay absent: their absence is the answer.
func (strictJSON) Marshal(m any) ([]byte, error) {
	return protojson.MarshalOptions{EmitDefaultValues: true}.Marshal(m.(proto.Message))
}

func (strictJSON) Unmarshal(b []byte, m any) error {
	msg := m.(proto.Message)
	err := protojson.UnmarshalOptions{DiscardUnknown: false}.Unmarshal(b, msg)
	if err != nil {
		// Name the field that does not fit rather than quote the decoder's internals.
		if tm := explainJSON(b, msg.ProtoReflect().Descriptor()); tm != nil {
			return tm
		}
	}
	return err
}
