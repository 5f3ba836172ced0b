package server

import (
	"fmt"
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"
)

// nulField returns the JSON path of the first string in m that holds U+0000, or "". Neither
// PostgreSQL nor CockroachDB stores NUL in text (and names, paths and PEM never need one), so a
// request carrying one is refused as the caller's mistake before anything is written, instead of
// failing at the database as an internal error.
func nulField(m protoreflect.Message) string {
	return nulIn(m, "")
}

func nulIn(m protoreflect.Message, prefix string) string {
	var found string
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		path := join(prefix, fd.JSONName())
		switch {
		case fd.IsList():
			l := v.List()
			for i := range l.Len() {
				if found = nulValue(fd, l.Get(i), fmt.Sprintf("%s[%d]", path, i)); found != "" {
					return false
				}
			}
		case fd.IsMap():
			v.Map().Range(func(k protoreflect.MapKey, mv protoreflect.Value) bool {
				key := k.String()
				if strings.ContainsRune(key, 0) {
					found = path
					return false
				}
				found = nulValue(fd.MapValue(), mv, fmt.Sprintf("%s[%q]", path, key))
				return found == ""
			})
		default:
			found = nulValue(fd, v, path)
		}
		return found == ""
	})
	return found
}

func nulValue(fd protoreflect.FieldDescriptor, v protoreflect.Value, path string) string {
	switch fd.Kind() {
	case protoreflect.StringKind:
		if strings.ContainsRune(v.String(), 0) {
			return path
		}
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return nulIn(v.Message(), path)
	}
	return ""
}

func join(prefix, name string) string {
	if prefix == "" {
		return name
	}
	return prefix + "." + name
}
