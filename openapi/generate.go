// Package openapi describes the JSON mapping (POST /api/compute/<group>/<method>) as an
// OpenAPI 3.1 document, generated from the proto descriptors compiled into this binary and
// their protovalidate rules. The generated document is checked in as compute.json (make
// generate writes it, make check-generated fails when it is stale) and embedded, so the server
// serves exactly the document of its own build at GET /api/compute/openapi.json.
//
// The schemas follow protojson, the mapping's encoding: lowerCamel field names, 64-bit integers
// as strings (numbers are accepted too), enums by name, Timestamp as an RFC 3339 string. Field
// rules become JSON Schema keywords: string lengths (minLength/maxLength, counted in characters
// as protovalidate counts them), patterns, string formats (uri, email, hostname, ip, uuid),
// numeric ranges (minimum/maximum, exclusive bounds), in-lists (enum), required fields, item
// counts and uniqueness. Rules JSON Schema cannot say (CEL expressions) are listed in the
// description of their schema under x-cel.
package openapi

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	"buf.build/gen/go/bufbuild/protovalidate/protocolbuffers/go/buf/validate"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	_ "better-compute.dev/compute/gen/go/bettercompute/compute/v1" // registers the descriptors
)

// Document is the checked-in description (compute.json), as served.
//
//go:embed compute.json
var Document []byte

// Mapping is what the server says of its JSON mapping: where it lives, which route calls which
// Connect procedure, and the HTTP status of each error code.
type Mapping struct {
	// Prefix is the routes' common path, e.g. /api/compute/.
	Prefix string
	// Routes maps "<group>/<method>" to a procedure, "/<package>.<Service>/<Method>".
	Routes map[string]string
	// ErrorStatus maps each platform error code to its HTTP status.
	ErrorStatus map[string]int
	// Version is the API version (info.version).
	Version string
}

// ErrorSchema is the name of the error body's schema.
const ErrorSchema = "Error"

// RequestIDHeader names the request id every answer carries (the caller's, when it sent a
// well-formed one, else one the server made).
const RequestIDHeader = "X-Request-Id"

// requestIDHeader is the response header's reference; requestIDHeaderObject its definition.
var requestIDHeader = map[string]any{"$ref": "#/components/headers/" + RequestIDHeader}

var requestIDHeaderObject = map[string]any{
	"description": "The request id: the caller's X-Request-Id when well-formed, else one the server made. It is in the error body (requestId), the server's log lines of the call and the events it caused.",
	"required":    true,
	"schema":      map[string]any{"type": "string", "pattern": requestIDPattern},
}

// requestIDPattern is what requestid.Valid accepts (and what the server's own ids match).
const requestIDPattern = "^[A-Za-z0-9._-]{1,128}$"

// Ref returns the $ref of the schema of message full name.
func Ref(fullName string) string { return "#/components/schemas/" + fullName }

// Generate builds the document for m.
func Generate(m Mapping) ([]byte, error) {
	g := &generator{schemas: map[string]any{}}
	paths := map[string]any{}
	routes := make([]string, 0, len(m.Routes))
	for r := range m.Routes {
		routes = append(routes, r)
	}
	sort.Strings(routes)
	var codes []string
	for c := range m.ErrorStatus {
		codes = append(codes, c)
	}
	sort.Strings(codes)
	for _, route := range routes {
		method, err := findMethod(m.Routes[route])
		if err != nil {
			return nil, fmt.Errorf("route %s: %w", route, err)
		}
		in, out := method.Input(), method.Output()
		g.message(in)
		g.message(out)
		group, _, _ := strings.Cut(route, "/")
		responses := map[string]any{
			"200": map[string]any{
				"description": "The call succeeded.",
				"content":     jsonContent(map[string]any{"$ref": Ref(string(out.FullName()))}),
			},
		}
		byStatus := map[int][]string{}
		for _, c := range codes {
			byStatus[m.ErrorStatus[c]] = append(byStatus[m.ErrorStatus[c]], c)
		}
		for status, cs := range byStatus {
			headers := map[string]any{RequestIDHeader: requestIDHeader}
			if status == 503 {
				headers["Retry-After"] = map[string]any{
					"description": "Seconds to wait before trying again.",
					"required":    true,
					"schema":      map[string]any{"type": "string", "pattern": "^[0-9]+$"},
				}
			}
			responses[fmt.Sprint(status)] = map[string]any{
				"description": "The call failed: " + strings.Join(cs, ", ") + ".",
				"headers":     headers,
				"content":     jsonContent(map[string]any{"$ref": Ref(ErrorSchema)}),
			}
		}
		// Any method but POST, before the body is read: INVALID_INPUT with an Allow header.
		responses["405"] = map[string]any{
			"description": "The HTTP method was not POST (INVALID_INPUT).",
			"headers": map[string]any{RequestIDHeader: requestIDHeader, "Allow": map[string]any{
				"description": "POST, the only method of the mapping.", "required": true,
				"schema": map[string]any{"type": "string", "const": "POST"},
			}},
			"content": jsonContent(map[string]any{"$ref": Ref(ErrorSchema)}),
		}
		responses["200"].(map[string]any)["headers"] = map[string]any{RequestIDHeader: requestIDHeader}
		description := "Calls the Connect procedure " + m.Routes[route] + " with the same validation, authentication and authorization."
		rules := rulesOf(in)
		if len(rules) > 0 {
			description += "\n\nBesides its schema, the request is refused with INVALID_INPUT naming the field when a rule below is broken (listed in x-rules):"
			for _, r := range rules {
				description += "\n- " + r.Field + ": " + r.Rule
			}
		}
		if rules == nil {
			rules = []Rule{}
		}
		paths[m.Prefix+route] = map[string]any{
			"post": map[string]any{
				"operationId": route,
				"summary":     string(method.Parent().Name()) + "." + string(method.Name()),
				"description": description,
				"x-rules":     rules,
				"tags":        []string{group},
				"parameters": []any{map[string]any{
					"name": RequestIDHeader, "in": "header", "required": false,
					"description": "The caller's id for this request, echoed in the answer; another form is replaced by one the server makes.",
					"schema":      map[string]any{"type": "string"},
				}},
				"requestBody": map[string]any{
					"required": true,
					"content":  jsonContent(map[string]any{"$ref": Ref(string(in.FullName()))}),
				},
				"responses": responses,
			},
		}
	}
	g.schemas[ErrorSchema] = map[string]any{
		"type":                 "object",
		"description":          "The body of a failed call: the platform reason, a message, the offending field of INVALID_INPUT and the state reason of INVALID_STATE.",
		"required":             []string{"code", "message"},
		"additionalProperties": false,
		"properties": map[string]any{
			"code":        map[string]any{"type": "string", "enum": codes},
			"message":     map[string]any{"type": "string"},
			"field":       map[string]any{"type": "string", "description": "The lowerCamel path of the offending field (INVALID_INPUT)."},
			"stateReason": map[string]any{"type": "string", "description": "The state that refused the call (INVALID_STATE)."},
			"requestId":   map[string]any{"type": "string", "description": "The request id, as the " + RequestIDHeader + " response header."},
		},
	}
	version := m.Version
	if version == "" {
		version = "v1"
	}
	doc := map[string]any{
		"openapi": "3.1.0",
		"info": map[string]any{
			"title":       "Better Compute JSON API",
			"version":     version,
			"description": infoDescription(m.Prefix),
		},
		"security": []any{map[string]any{"bearer": []any{}}},
		"paths":    paths,
		"components": map[string]any{
			"securitySchemes": map[string]any{"bearer": map[string]any{"type": "http", "scheme": "bearer", "description": "A Better Compute API token."}},
			"schemas":         g.schemas,
			"headers":         map[string]any{RequestIDHeader: requestIDHeaderObject},
		},
	}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

func jsonContent(schema any) map[string]any {
	return map[string]any{"application/json": map[string]any{"schema": schema}}
}

func findMethod(procedure string) (protoreflect.MethodDescriptor, error) {
	svc, name, ok := strings.Cut(strings.TrimPrefix(procedure, "/"), "/")
	if !ok {
		return nil, fmt.Errorf("procedure %q is not /<service>/<method>", procedure)
	}
	d, err := protoregistry.GlobalFiles.FindDescriptorByName(protoreflect.FullName(svc))
	if err != nil {
		return nil, fmt.Errorf("service %s: %w", svc, err)
	}
	sd, ok := d.(protoreflect.ServiceDescriptor)
	if !ok {
		return nil, fmt.Errorf("%s is not a service", svc)
	}
	md := sd.Methods().ByName(protoreflect.Name(name))
	if md == nil {
		return nil, fmt.Errorf("service %s has no method %s", svc, name)
	}
	return md, nil
}

type generator struct{ schemas map[string]any }

// wellKnown are the schemas of the well-known types, as protojson writes them.
var wellKnown = map[protoreflect.FullName]map[string]any{
	"google.protobuf.Timestamp":   {"type": "string", "format": "date-time"},
	"google.protobuf.Duration":    {"type": "string", "pattern": `^-?[0-9]+(\.[0-9]{1,9})?s$`},
	"google.protobuf.FieldMask":   {"type": "string", "description": "Comma-separated lowerCamel field paths."},
	"google.protobuf.Struct":      {"type": "object"},
	"google.protobuf.Value":       {},
	"google.protobuf.ListValue":   {"type": "array"},
	"google.protobuf.Empty":       {"type": "object", "additionalProperties": false},
	"google.protobuf.Any":         {"type": "object", "required": []string{"@type"}},
	"google.protobuf.StringValue": {"type": "string"}, "google.protobuf.BoolValue": {"type": "boolean"},
	"google.protobuf.BytesValue": {"type": "string", "contentEncoding": "base64"},
	"google.protobuf.Int32Value": {"type": "integer", "format": "int32"}, "google.protobuf.UInt32Value": {"type": "integer", "format": "int64", "minimum": 0},
	"google.protobuf.Int64Value": int64Schema("int64"), "google.protobuf.UInt64Value": int64Schema("uint64"),
	"google.protobuf.FloatValue": {"type": "number"}, "google.protobuf.DoubleValue": {"type": "number"},
}

func int64Schema(format string) map[string]any {
	pattern := `^-?[0-9]+$`
	if format == "uint64" {
		pattern = `^[0-9]+$`
	}
	return map[string]any{"type": []string{"string", "integer"}, "format": format, "pattern": pattern}
}

// message adds the schema of md (and of every message it refers to) to the components.
func (g *generator) message(md protoreflect.MessageDescriptor) {
	name := string(md.FullName())
	if _, done := g.schemas[name]; done {
		return
	}
	if wk, ok := wellKnown[md.FullName()]; ok {
		g.schemas[name] = wk
		return
	}
	s := map[string]any{"type": "object", "additionalProperties": false}
	g.schemas[name] = s // before the fields: recursive messages refer to it
	props := map[string]any{}
	var required []string
	fields := md.Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		rules, _ := proto.GetExtension(fd.Options(), validate.E_Field).(*validate.FieldRules)
		if rules.GetIgnore() == validate.Ignore_IGNORE_ALWAYS {
			rules = nil
		}
		schema := g.field(fd, rules)
		req := rules.GetRequired() || zeroRefused(fd, rules)
		for _, r := range rules.GetCel() {
			if tr, ok := celSchemas[r.GetId()]; ok {
				merge(schema, tr.schema)
				req = req || tr.required
			}
		}
		if items, ok := schema["items"].(map[string]any); ok {
			for _, r := range rules.GetRepeated().GetItems().GetCel() {
				if tr, ok := celSchemas[r.GetId()]; ok {
					merge(items, tr.schema)
				}
			}
		}
		if ignoresZero(fd, rules) {
			// The zero value skips the rules: "" (or 0, false) is accepted as unset.
			schema = map[string]any{"anyOf": []any{map[string]any{"enum": zeroValues(fd)}, schema}}
		}
		if !req && !fd.IsList() && !fd.IsMap() && fd.Message() != nil && fd.Message().FullName() != "google.protobuf.Value" {
			// protojson reads null as the field left out (on an update: the part removed).
			schema = map[string]any{"anyOf": []any{schema, map[string]any{"type": "null"}}}
		}
		props[fd.JSONName()] = schema
		if req {
			required = append(required, fd.JSONName())
		}
	}
	s["properties"] = props
	if len(required) > 0 {
		s["required"] = required
	}
	var notes []string
	var oneofs []map[string]any
	for i := 0; i < md.Oneofs().Len(); i++ {
		od := md.Oneofs().Get(i)
		if od.IsSynthetic() {
			continue
		}
		var names []string
		for j := 0; j < od.Fields().Len(); j++ {
			names = append(names, od.Fields().Get(j).JSONName())
		}
		rule, _ := proto.GetExtension(od.Options(), validate.E_Oneof).(*validate.OneofRules)
		word := "at most one"
		if rule.GetRequired() {
			word = "exactly one"
		}
		notes = append(notes, fmt.Sprintf("Oneof %s: %s of %s.", od.Name(), word, strings.Join(names, ", ")))
		oneofs = append(oneofs, oneofSchema(names, rule.GetRequired()))
	}
	if mr, ok := proto.GetExtension(md.Options(), validate.E_Message).(*validate.MessageRules); ok {
		for _, r := range mr.GetCel() {
			notes = append(notes, celNote(r))
			if tr, ok := celSchemas[r.GetId()]; ok {
				oneofs = append(oneofs, tr.schema)
			}
		}
	}
	switch len(oneofs) {
	case 0:
	case 1:
		merge(s, oneofs[0])
	default:
		s["allOf"] = oneofs
	}
	for i := 0; i < fields.Len(); i++ {
		if rules, ok := proto.GetExtension(fields.Get(i).Options(), validate.E_Field).(*validate.FieldRules); ok {
			for _, r := range append(slices.Clone(rules.GetCel()), rules.GetRepeated().GetItems().GetCel()...) {
				notes = append(notes, fields.Get(i).JSONName()+": "+celNote(r))
			}
		}
	}
	if len(notes) > 0 {
		s["description"] = strings.Join(notes, "\n")
		s["x-cel"] = notes
	}
}

// merge adds the keywords of extra to s; a keyword s has already goes into s's allOf instead.
func merge(s, extra map[string]any) {
	for k, v := range extra {
		if _, taken := s[k]; !taken {
			s[k] = v
			continue
		}
		all, _ := s["allOf"].([]any)
		s["allOf"] = append(all, map[string]any{k: v})
	}
}

func celNote(r *validate.Rule) string {
	if r.GetMessage() != "" {
		return r.GetId() + ": " + r.GetMessage()
	}
	return r.GetId() + ": " + r.GetExpression()
}

// field is the schema of one field with its rules.
func (g *generator) field(fd protoreflect.FieldDescriptor, rules *validate.FieldRules) map[string]any {
	switch {
	case fd.IsMap():
		s := map[string]any{"type": "object", "additionalProperties": g.single(fd.MapValue(), rules.GetMap().GetValues())}
		if mr := rules.GetMap(); mr != nil {
			if mr.HasMinPairs() {
				s["minProperties"] = mr.GetMinPairs()
			}
			if mr.HasMaxPairs() {
				s["maxProperties"] = mr.GetMaxPairs()
			}
		}
		return s
	case fd.IsList():
		s := map[string]any{"type": "array", "items": g.single(fd, rules.GetRepeated().GetItems())}
		if rr := rules.GetRepeated(); rr != nil {
			if rr.HasMinItems() {
				s["minItems"] = rr.GetMinItems()
			}
			if rr.HasMaxItems() {
				s["maxItems"] = rr.GetMaxItems()
			}
			if rr.GetUnique() {
				s["uniqueItems"] = true
			}
		}
		return s
	}
	return g.single(fd, rules)
}

// single is the schema of one value of fd's kind (a list's item, a map's value, a scalar).
func (g *generator) single(fd protoreflect.FieldDescriptor, rules *validate.FieldRules) map[string]any {
	var s map[string]any
	switch fd.Kind() {
	case protoreflect.MessageKind, protoreflect.GroupKind:
		g.message(fd.Message())
		return map[string]any{"$ref": Ref(string(fd.Message().FullName()))}
	case protoreflect.StringKind:
		s = map[string]any{"type": "string"}
		stringRules(s, rules.GetString())
	case protoreflect.BoolKind:
		s = map[string]any{"type": "boolean"}
	case protoreflect.BytesKind:
		s = map[string]any{"type": "string", "contentEncoding": "base64"}
	case protoreflect.EnumKind:
		s = enumSchema(fd.Enum(), rules.GetEnum())
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		s = map[string]any{"type": "integer", "format": "int32"}
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		s = map[string]any{"type": "integer", "format": "int64", "minimum": 0, "maximum": 4294967295}
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		s = int64Schema("int64")
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		s = int64Schema("uint64")
	case protoreflect.FloatKind:
		s = map[string]any{"type": "number", "format": "float"}
	case protoreflect.DoubleKind:
		s = map[string]any{"type": "number", "format": "double"}
	default:
		s = map[string]any{}
	}
	if rules != nil {
		numericRules(s, rules)
	}
	return s
}

func stringRules(s map[string]any, r *validate.StringRules) {
	if r == nil {
		return
	}
	if r.HasLen() {
		s["minLength"], s["maxLength"] = r.GetLen(), r.GetLen()
	}
	if r.HasMinLen() {
		s["minLength"] = r.GetMinLen()
	}
	if r.HasMaxLen() {
		s["maxLength"] = r.GetMaxLen()
	}
	var patterns []string
	if r.HasPattern() {
		patterns = append(patterns, r.GetPattern())
	}
	if r.HasPrefix() {
		patterns = append(patterns, "^"+quoteMeta(r.GetPrefix()))
	}
	if r.HasSuffix() {
		patterns = append(patterns, quoteMeta(r.GetSuffix())+"$")
	}
	if r.HasContains() {
		patterns = append(patterns, quoteMeta(r.GetContains()))
	}
	switch len(patterns) {
	case 0:
	case 1:
		s["pattern"] = patterns[0]
	default:
		s["pattern"] = patterns[0]
		var all []any
		for _, p := range patterns[1:] {
			all = append(all, map[string]any{"pattern": p})
		}
		s["allOf"] = all
	}
	if r.HasConst() {
		s["const"] = r.GetConst()
	}
	if in := r.GetIn(); len(in) > 0 {
		s["enum"] = in
	}
	if out := r.GetNotIn(); len(out) > 0 {
		s["not"] = map[string]any{"enum": out}
	}
	switch {
	case r.GetEmail():
		s["format"] = "email"
	case r.GetHostname():
		s["format"] = "hostname"
	case r.GetIp():
		s["format"] = "ip"
	case r.GetIpv4():
		s["format"] = "ipv4"
	case r.GetIpv6():
		s["format"] = "ipv6"
	case r.GetUri():
		s["format"] = "uri"
	case r.GetUriRef():
		s["format"] = "uri-reference"
	case r.GetUuid():
		s["format"] = "uuid"
	case r.GetAddress():
		s["format"] = "hostname-or-ip"
	}
}

// quoteMeta escapes s for an ECMA-262 pattern.
func quoteMeta(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`\.+*?()|[]{}^$/`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

func enumSchema(ed protoreflect.EnumDescriptor, r *validate.EnumRules) map[string]any {
	in := map[int32]bool{}
	for _, v := range r.GetIn() {
		in[v] = true
	}
	out := map[int32]bool{}
	for _, v := range r.GetNotIn() {
		out[v] = true
	}
	var names []string
	values := ed.Values()
	for i := 0; i < values.Len(); i++ {
		v := values.Get(i)
		if (len(in) > 0 && !in[int32(v.Number())]) || out[int32(v.Number())] {
			continue
		}
		if r.HasConst() && r.GetConst() != int32(v.Number()) {
			continue
		}
		names = append(names, string(v.Name()))
	}
	return map[string]any{"type": "string", "enum": names}
}

// numericRules turns the range and in-list rules of any numeric rule message (Int32Rules,
// UInt64Rules, DoubleRules, ...) into JSON Schema keywords; they share field names.
func numericRules(s map[string]any, rules *validate.FieldRules) {
	oneof := rules.ProtoReflect().Descriptor().Oneofs().ByName("type")
	fd := rules.ProtoReflect().WhichOneof(oneof)
	if fd == nil || fd.Message() == nil {
		return
	}
	switch fd.Name() {
	case "int32", "int64", "uint32", "uint64", "sint32", "sint64", "fixed32", "fixed64", "sfixed32", "sfixed64", "float", "double":
	default:
		return
	}
	m := rules.ProtoReflect().Get(fd).Message()
	num := func(name protoreflect.Name) (any, bool) {
		f := m.Descriptor().Fields().ByName(name)
		if f == nil || !m.Has(f) {
			return nil, false
		}
		return m.Get(f).Interface(), true
	}
	if v, ok := num("gte"); ok {
		s["minimum"] = v
	}
	if v, ok := num("gt"); ok {
		s["exclusiveMinimum"] = v
	}
	if v, ok := num("lte"); ok {
		s["maximum"] = v
	}
	if v, ok := num("lt"); ok {
		s["exclusiveMaximum"] = v
	}
	if v, ok := num("const"); ok {
		s["const"] = v
	}
	if f := m.Descriptor().Fields().ByName("in"); f != nil && m.Get(f).List().Len() > 0 {
		var vs []any
		for i := 0; i < m.Get(f).List().Len(); i++ {
			vs = append(vs, m.Get(f).List().Get(i).Interface())
		}
		s["enum"] = vs
	}
}

// oneofSchema says "exactly one of names" (required) or "at most one of names" in JSON Schema.
func oneofSchema(names []string, required bool) map[string]any {
	var each []any
	for _, n := range names {
		each = append(each, map[string]any{"required": []string{n}})
	}
	if required {
		return map[string]any{"oneOf": each}
	}
	var pairs []any
	for i := range names {
		for j := i + 1; j < len(names); j++ {
			pairs = append(pairs, map[string]any{"required": []string{names[i], names[j]}})
		}
	}
	if len(pairs) == 0 {
		return map[string]any{}
	}
	return map[string]any{"not": map[string]any{"anyOf": pairs}}
}

// implicit reports whether fd is a singular scalar without presence: protojson leaves out its
// zero value, and protovalidate checks the zero value against the rules like any other.
func implicit(fd protoreflect.FieldDescriptor) bool {
	return !fd.IsList() && !fd.IsMap() && !fd.HasPresence() && fd.Message() == nil
}

// ignoresZero reports whether fd's rules skip its zero value (IGNORE_IF_ZERO_VALUE on a scalar).
func ignoresZero(fd protoreflect.FieldDescriptor, rules *validate.FieldRules) bool {
	return rules != nil && rules.GetIgnore() == validate.Ignore_IGNORE_IF_ZERO_VALUE && !fd.IsList() && !fd.IsMap() && fd.Message() == nil
}

// zeroValues are the JSON spellings protojson accepts for fd's zero value.
func zeroValues(fd protoreflect.FieldDescriptor) []any {
	switch fd.Kind() {
	case protoreflect.StringKind, protoreflect.BytesKind:
		return []any{""}
	case protoreflect.BoolKind:
		return []any{false}
	case protoreflect.EnumKind:
		return []any{string(fd.Enum().Values().ByNumber(0).Name()), 0}
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind, protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return []any{0, "0"}
	}
	return []any{0}
}

// zeroRefused reports whether the rules refuse the field being left out: a list or map with a
// minimum count, or a scalar without presence whose zero value fails the rules (a pattern or
// minimum length the empty string misses, a range without 0, an in-list without the zero value).
// Such a field must be in every request, as a required rule would say.
func zeroRefused(fd protoreflect.FieldDescriptor, rules *validate.FieldRules) bool {
	if rules == nil || rules.GetIgnore() != validate.Ignore_IGNORE_UNSPECIFIED {
		return false
	}
	switch {
	case fd.IsMap():
		return rules.GetMap().GetMinPairs() > 0
	case fd.IsList():
		return rules.GetRepeated().GetMinItems() > 0
	case !implicit(fd):
		return false
	}
	switch fd.Kind() {
	case protoreflect.StringKind:
		r := rules.GetString()
		if r == nil {
			return false
		}
		if r.GetMinLen() > 0 || r.GetLen() > 0 || r.GetMinBytes() > 0 || r.GetLenBytes() > 0 ||
			r.GetPrefix() != "" || r.GetSuffix() != "" || r.GetContains() != "" || (r.HasConst() && r.GetConst() != "") {
			return true
		}
		if r.HasPattern() {
			if re, err := regexp.Compile(r.GetPattern()); err == nil && !re.MatchString("") {
				return true
			}
		}
		if in := r.GetIn(); len(in) > 0 && !slices.Contains(in, "") {
			return true
		}
		if slices.Contains(r.GetNotIn(), "") {
			return true
		}
		return r.GetEmail() || r.GetHostname() || r.GetIp() || r.GetIpv4() || r.GetIpv6() || r.GetUri() || r.GetUuid() || r.GetAddress()
	case protoreflect.EnumKind:
		r := rules.GetEnum()
		if r == nil {
			return false
		}
		if in := r.GetIn(); len(in) > 0 && !slices.Contains(in, 0) {
			return true
		}
		return slices.Contains(r.GetNotIn(), 0) || (r.HasConst() && r.GetConst() != 0)
	case protoreflect.BoolKind:
		return rules.GetBool().GetConst()
	}
	return numericZeroRefused(rules)
}

// numericZeroRefused reports whether a numeric rule message refuses 0.
func numericZeroRefused(rules *validate.FieldRules) bool {
	oneof := rules.ProtoReflect().Descriptor().Oneofs().ByName("type")
	fd := rules.ProtoReflect().WhichOneof(oneof)
	if fd == nil || fd.Message() == nil {
		return false
	}
	m := rules.ProtoReflect().Get(fd).Message()
	num := func(name protoreflect.Name) (float64, bool) {
		f := m.Descriptor().Fields().ByName(name)
		if f == nil || !m.Has(f) {
			return 0, false
		}
		return toFloat(m.Get(f).Interface()), true
	}
	if v, ok := num("gte"); ok && v > 0 {
		return true
	}
	if v, ok := num("gt"); ok && v >= 0 {
		return true
	}
	if v, ok := num("lte"); ok && v < 0 {
		return true
	}
	if v, ok := num("lt"); ok && v <= 0 {
		return true
	}
	if v, ok := num("const"); ok && v != 0 {
		return true
	}
	for _, name := range []protoreflect.Name{"in", "not_in"} {
		f := m.Descriptor().Fields().ByName(name)
		if f == nil || m.Get(f).List().Len() == 0 {
			continue
		}
		hasZero := false
		for i := 0; i < m.Get(f).List().Len(); i++ {
			if toFloat(m.Get(f).List().Get(i).Interface()) == 0 {
				hasZero = true
			}
		}
		if (name == "in") != hasZero {
			return true
		}
	}
	return false
}

func toFloat(v any) float64 {
	switch n := v.(type) {
	case int32:
		return float64(n)
	case int64:
		return float64(n)
	case uint32:
		return float64(n)
	case uint64:
		return float64(n)
	case float32:
		return float64(n)
	case float64:
		return n
	}
	return 0
}

// infoDescription is the document's introduction: the mapping, how requests are refused, the
// formats it uses beyond JSON Schema's.
func infoDescription(prefix string) string {
	return "The JSON mapping of the Better Compute control plane: every unary method as POST " + prefix + "<group>/<method> with a protojson body. " +
		"A request that breaks its schema is refused with INVALID_INPUT naming the field; so is one that breaks a rule of the operation's x-rules " +
		"(each {field, rule}: what JSON Schema cannot say, such as a rule across fields or on what is stored). No string may contain the NUL character (U+0000). " +
		"Formats beyond JSON Schema's: int32, int64, uint64 (integers, 64-bit ones also as decimal strings), hostname-or-ip, and " + FormatIPNetwork +
		" (a CIDR block whose host bits are zero: 10.0.0.0/8, 2001:db8::/32). Generated from the proto descriptors and their protovalidate rules by cmd/openapi-gen; do not edit."
}
