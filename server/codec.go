package server

import (
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// strictJSON is the JSON codec of every handler: unlike Connect's default it refuses unknown
// fields, so a misspelt field ("idempotencykey") is INVALID_INPUT instead of silently ignored.
type strictJSON struct{ name string }

func (c strictJSON) Name() string { return c.name }

func (strictJSON) Marshal(m any) ([]byte, error) {
	return protojson.Marshal(m.(proto.Message))
}

func (strictJSON) Unmarshal(b []byte, m any) error {
	return protojson.UnmarshalOptions{DiscardUnknown: false}.Unmarshal(b, m.(proto.Message))
}
