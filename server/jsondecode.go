package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"
)

// typeMismatch is a JSON body that does not fit its message, named by the first field that does
// not fit ("forwarding[0].entryPort"), in the spelling of the API's JSON.
type typeMismatch struct {
	Field   string
	Message string
}

func (e *typeMismatch) Error() string { return e.Field + ": " + e.Message }

// explainJSON walks a body that protojson refused against the request's descriptor and names
// the first field whose value has the wrong shape, so a caller reads "entryPort: a number is
// expected" instead of the decoder's internals. It returns nil when it finds no such field (the
// body is not JSON at all, or the decoder refused it for another reason).
func explainJSON(body []byte, md protoreflect.MessageDescriptor) *typeMismatch {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil
	}
	return explainMessage("", v, md)
}

func explainMessage(path string, v any, md protoreflect.MessageDescriptor) *typeMismatch {
	if v == nil || wellKnown(md) {
		return nil // null is the default; well-known types have JSON forms of their own
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return &typeMismatch{Field: orRoot(path), Message: "an object is expected, not " + shape(v)}
	}
	fields := md.Fields()
	for key, val := range obj {
		fd := fields.ByJSONName(key)
		if fd == nil {
			fd = fields.ByTextName(key)
		}
		here := join(path, key)
		if fd == nil {
			return &typeMismatch{Field: here, Message: "is not a field of this request"}
		}
		if m := explainField(here, val, fd); m != nil {
			return m
		}
	}
	return nil
}

func explainField(path string, v any, fd protoreflect.FieldDescriptor) *typeMismatch {
	if v == nil {
		return nil
	}
	switch {
	case fd.IsMap():
		obj, ok := v.(map[string]any)
		if !ok {
			return &typeMismatch{Field: path, Message: "an object is expected, not " + shape(v)}
		}
		for k, item := range obj {
			if m := explainValue(fmt.Sprintf("%s[%q]", path, k), item, fd.MapValue()); m != nil {
				return m
			}
		}
		return nil
	case fd.IsList():
		list, ok := v.([]any)
		if !ok {
			return &typeMismatch{Field: path, Message: "a list is expected, not " + shape(v)}
		}
		for i, item := range list {
			if m := explainValue(fmt.Sprintf("%s[%d]", path, i), item, fd); m != nil {
				return m
			}
		}
		return nil
	}
	return explainValue(path, v, fd)
}

// explainValue checks one value (a singular field, a list item or a map value) against its kind.
func explainValue(path string, v any, fd protoreflect.FieldDescriptor) *typeMismatch {
	if v == nil {
		return nil
	}
	switch fd.Kind() {
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return explainMessage(path, v, fd.Message())
	case protoreflect.BoolKind:
		if _, ok := v.(bool); !ok {
			return &typeMismatch{Field: path, Message: "true or false is expected, not " + shape(v)}
		}
	case protoreflect.StringKind, protoreflect.BytesKind:
		if _, ok := v.(string); !ok {
			return &typeMismatch{Field: path, Message: "a string is expected, not " + shape(v)}
		}
	case protoreflect.EnumKind:
		switch x := v.(type) {
		case string:
			if fd.Enum().Values().ByName(protoreflect.Name(x)) == nil {
				return &typeMismatch{Field: path, Message: fmt.Sprintf("%q is not one of its values", x)}
			}
		case json.Number:
		default:
			return &typeMismatch{Field: path, Message: "an enum value is expected, not " + shape(v)}
		}
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		if !numeric(v, false) {
			return &typeMismatch{Field: path, Message: "a number is expected, not " + shape(v)}
		}
	default: // the integer kinds: protojson takes a number or a quoted integer
		if !numeric(v, true) {
			return &typeMismatch{Field: path, Message: "a whole number is expected, not " + shape(v)}
		}
	}
	return nil
}

// numeric tells whether v is a number protojson takes: a JSON number or a quoted one, whole
// when whole is set.
func numeric(v any, whole bool) bool {
	var s string
	switch x := v.(type) {
	case json.Number:
		s = x.String()
	case string:
		s = x
	default:
		return false
	}
	f, err := strconv.ParseFloat(s, 64)
	return err == nil && (!whole || f == math.Trunc(f))
}

// shape names a JSON value's type for a message; the value itself is not repeated (it may be a
// secret sent in the wrong field).
func shape(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case bool:
		return "a boolean"
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	}
	return "null"
}

func wellKnown(md protoreflect.MessageDescriptor) bool {
	return strings.HasPrefix(string(md.FullName()), "google.protobuf.")
}

func orRoot(path string) string {
	if path == "" {
		return "(body)"
	}
	return path
}
