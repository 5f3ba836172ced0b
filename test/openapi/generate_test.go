package openapi

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"regexp"
	"regexp/syntax"
	"slices"
	"sort"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// maker makes schema-valid values from the document's JSON Schemas: required fields always,
// optional ones at random, one branch of each oneOf/anyOf, enums, constants, ranges, list sizes,
// formats and patterns (strings drawn from the pattern's own syntax tree). Each value made for a
// component schema is checked against that schema by the validator and made again when the
// random choices broke a rule across fields (if/then, not); ids of existing objects are used
// where a pattern names an id kind, and a small set of known values per field name.
type maker struct {
	t   *testing.T
	sp  *spec
	rnd *rand.Rand
	// byPrefix maps an id kind's prefix ("pool_") to an object of that kind.
	byPrefix map[string]string
	// anyIDs are all those objects (for generic object ids such as a grant's objectId).
	anyIDs []string
	// known are values to try first for a field name.
	known map[string][]any
	// tenant is the tenant every request names.
	tenant string
}

// idPrefix reads the literal id prefix a pattern starts with (^pool_...).
var idPrefix = regexp.MustCompile(`^\^([a-z]+_)\[`)

const attempts = 60

// request makes a body for the request schema at pointer, valid against it.
func (m *maker) request(pointer string) (map[string]any, error) {
	sch := m.sp.schema(m.t, pointer)
	var last error
	for range attempts {
		v, _ := m.value(resolve(m.sp, pointer), "", 0).(map[string]any)
		if v == nil {
			v = map[string]any{}
		}
		if err := sch.Validate(roundTrip(v)); err != nil {
			last = err
			continue
		}
		return v, nil
	}
	return nil, last
}

// roundTrip turns a value into what the validator reads from JSON (json.Number for numbers).
func roundTrip(v any) any {
	b, _ := json.Marshal(v)
	out, _ := jsonschema.UnmarshalJSON(strings.NewReader(string(b)))
	return out
}

// value makes a value for schema s of the field called name.
func (m *maker) value(s map[string]any, name string, depth int) any {
	if ref, ok := s["$ref"].(string); ok {
		target := resolve(m.sp, ref)
		sch := m.sp.schema(m.t, ref)
		var v any
		for range attempts {
			v = m.value(target, name, depth+1)
			if sch.Validate(roundTrip(v)) == nil {
				return v
			}
		}
		return v
	}
	if c, ok := s["const"]; ok {
		return c
	}
	if e, ok := s["enum"].([]any); ok && len(e) > 0 {
		return e[m.rnd.IntN(len(e))]
	}
	for _, key := range []string{"oneOf", "anyOf"} {
		if branches, ok := s[key].([]any); ok && !isObject(s) {
			return m.value(m.pick(s, key, branches), name, depth)
		}
	}
	if all, ok := s["allOf"].([]any); ok && !isObject(s) {
		merged := without(s, "allOf")
		for _, a := range all {
			merged = mergeSchemas(merged, obj(a))
		}
		return m.value(merged, name, depth)
	}
	switch typeOf(s) {
	case "object":
		return m.object(s, depth)
	case "array":
		return m.array(s, name, depth)
	case "string":
		return m.str(s, name)
	case "integer":
		return m.integer(s)
	case "number":
		return m.number(s)
	case "boolean":
		if vs := m.known[name]; len(vs) > 0 && m.rnd.IntN(2) == 0 {
			return vs[m.rnd.IntN(len(vs))]
		}
		return m.rnd.IntN(2) == 0
	case "null":
		return nil
	}
	return map[string]any{}
}

// pick chooses a branch of s's oneOf/anyOf, merged with the rest of s; a null branch is rare.
func (m *maker) pick(s map[string]any, key string, branches []any) map[string]any {
	var choices []map[string]any
	for _, b := range branches {
		if typeOf(obj(b)) != "null" || m.rnd.IntN(10) == 0 {
			choices = append(choices, obj(b))
		}
	}
	if len(choices) == 0 {
		choices = []map[string]any{obj(branches[0])}
	}
	return mergeSchemas(without(s, key), choices[m.rnd.IntN(len(choices))])
}

func isObject(s map[string]any) bool { return typeOf(s) == "object" && s["properties"] != nil }

func typeOf(s map[string]any) string {
	switch t := s["type"].(type) {
	case string:
		return t
	case []any:
		// protojson's 64-bit integers: a number or a decimal string; send the number.
		for _, x := range t {
			if x == "integer" {
				return "integer"
			}
		}
		if len(t) > 0 {
			return t[0].(string)
		}
	}
	switch {
	case s["properties"] != nil || s["additionalProperties"] != nil:
		return "object"
	case s["items"] != nil:
		return "array"
	case s["pattern"] != nil || s["format"] != nil || s["minLength"] != nil || s["maxLength"] != nil:
		return "string"
	}
	return ""
}

func without(s map[string]any, key string) map[string]any {
	out := make(map[string]any, len(s))
	for k, v := range s {
		if k != key {
			out[k] = v
		}
	}
	return out
}

// mergeSchemas is a ∧ b for the keywords the maker reads: b's keywords win, except required
// (joined) and properties (merged per property).
func mergeSchemas(a, b map[string]any) map[string]any {
	out := without(a, "")
	for k, v := range b {
		switch k {
		case "required":
			req, _ := out["required"].([]any)
			for _, r := range v.([]any) {
				if !slices.Contains(req, r) {
					req = append(req, r)
				}
			}
			out["required"] = req
		case "properties":
			props := map[string]any{}
			for pk, pv := range obj(out["properties"]) {
				props[pk] = pv
			}
			for pk, pv := range obj(v) {
				if cur, ok := props[pk]; ok {
					props[pk] = mergeSchemas(obj(cur), obj(pv))
				} else {
					props[pk] = pv
				}
			}
			out["properties"] = props
		default:
			out[k] = v
		}
	}
	return out
}

func (m *maker) object(s map[string]any, depth int) map[string]any {
	// Branches of the object's own oneOf/anyOf/allOf add required fields and narrow properties.
	s = without(s, "")
	for _, key := range []string{"oneOf", "anyOf"} {
		if branches, ok := s[key].([]any); ok {
			s = m.pick(s, key, branches)
		}
	}
	if all, ok := s["allOf"].([]any); ok {
		s = without(s, "allOf")
		for _, a := range all {
			part := obj(a)
			for _, key := range []string{"oneOf", "anyOf"} {
				if branches, ok := part[key].([]any); ok {
					part = m.pick(part, key, branches)
				}
			}
			if _, cond := part["if"]; !cond {
				s = mergeSchemas(s, part)
			}
		}
	}
	out := map[string]any{}
	props := obj(s["properties"])
	if props == nil {
		if extra := obj(s["additionalProperties"]); extra != nil && m.rnd.IntN(2) == 0 {
			for i := range 1 + m.rnd.IntN(2) {
				out[fmt.Sprintf("key%d", i)] = m.value(extra, "", depth+1)
			}
		}
		return out
	}
	required, _ := s["required"].([]any)
	names := make([]string, 0, len(props))
	for k := range props {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		need := slices.Contains(required, any(k))
		if !need && (depth > 3 || m.rnd.IntN(2) == 0) {
			continue
		}
		out[k] = m.value(obj(props[k]), k, depth+1)
	}
	return out
}

func (m *maker) array(s map[string]any, name string, depth int) []any {
	lo, hi := 0, 2
	if v, ok := num(s["minItems"]); ok {
		lo = int(v)
		hi = lo + 2
	}
	if v, ok := num(s["maxItems"]); ok && int(v) < hi {
		hi = int(v)
	}
	n := lo
	if hi > lo {
		n += m.rnd.IntN(hi - lo + 1)
	}
	item := obj(s["items"])
	out := []any{}
	seen := map[string]bool{}
	for range n * 4 {
		if len(out) == n {
			break
		}
		v := m.value(item, strings.TrimSuffix(name, "s"), depth+1)
		b, _ := json.Marshal(v)
		if s["uniqueItems"] == true && seen[string(b)] {
			continue
		}
		seen[string(b)] = true
		out = append(out, v)
	}
	return out
}

func num(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, true
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	}
	return 0, false
}

func (m *maker) integer(s map[string]any) any {
	lo, hi := 0.0, 1000.0
	if v, ok := num(s["minimum"]); ok {
		lo = v
	}
	if v, ok := num(s["exclusiveMinimum"]); ok {
		lo = v + 1
	}
	if v, ok := num(s["maximum"]); ok {
		hi = v
	} else {
		hi = lo + 1000
	}
	if v, ok := num(s["exclusiveMaximum"]); ok {
		hi = v - 1
	}
	switch m.rnd.IntN(4) {
	case 0:
		return int64(lo)
	case 1:
		return int64(hi)
	}
	span := math.Min(hi-lo, 1<<30)
	return int64(lo) + m.rnd.Int64N(int64(span)+1)
}

func (m *maker) number(s map[string]any) any {
	lo, hi := 0.0, 100.0
	if v, ok := num(s["minimum"]); ok {
		lo = v
	}
	if v, ok := num(s["maximum"]); ok {
		hi = v
	}
	return lo + m.rnd.Float64()*(hi-lo)
}

// formatValues are values of each format the document uses on strings.
var formatValues = map[string][]string{
	"date-time":      {"2026-01-02T03:04:05Z", "2025-06-30T23:59:59.5Z"},
	"ip":             {"192.0.2.10", "198.51.100.7", "2001:db8::1"},
	"ipv4":           {"192.0.2.10"},
	"ipv6":           {"2001:db8::1"},
	"hostname":       {"www.example.com", "api.example.org"},
	"hostname-or-ip": {"192.0.2.30", "bmc7.example.com"},
	"email":          {"ops@example.com"},
	"uri":            {"https://images.example.com/ubuntu.img", "http://example.com/x"},
	"uuid":           {"1b4e28ba-2fa1-11d2-883f-0016d3cca427"},
	"ip-network":     {"10.40.0.0/24", "192.168.8.0/28", "172.16.0.0/16", "2001:db8::/48", "203.0.113.0/24"},
}

func (m *maker) str(s map[string]any, name string) any {
	pattern, _ := s["pattern"].(string)
	if name == "tenantId" && m.rnd.IntN(10) > 0 {
		return m.tenant
	}
	if vs := m.known[name]; len(vs) > 0 && m.rnd.IntN(5) > 0 {
		return vs[m.rnd.IntN(len(vs))]
	}
	if p := idPrefix.FindStringSubmatch(pattern); p != nil && m.rnd.IntN(8) > 0 {
		if id, ok := m.byPrefix[p[1]]; ok {
			return id
		}
	}
	if strings.HasSuffix(name, "Id") && pattern != "" && idPrefix.FindStringSubmatch(pattern) == nil && m.rnd.IntN(2) == 0 {
		return m.anyIDs[m.rnd.IntN(len(m.anyIDs))]
	}
	if f, ok := s["format"].(string); ok {
		if vs := formatValues[f]; len(vs) > 0 {
			return vs[m.rnd.IntN(len(vs))]
		}
	}
	if pattern != "" {
		if v, ok := m.fromPattern(pattern, s); ok {
			return v
		}
	}
	lo, hi := 0, 12
	if v, ok := num(s["minLength"]); ok {
		lo = int(v)
		hi = max(hi, lo+4)
	}
	if v, ok := num(s["maxLength"]); ok && int(v) < hi {
		hi = int(v)
	}
	n := lo + m.rnd.IntN(hi-lo+1)
	b := make([]byte, n)
	for i := range b {
		b[i] = "abcdefghijklmnopqrstuvwxyz0123456789"[m.rnd.IntN(36)]
	}
	return string(b)
}

// fromPattern draws a string matching pattern (and the length bounds of s).
func (m *maker) fromPattern(pattern string, s map[string]any) (string, bool) {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		m.t.Errorf("pattern %q: %v", pattern, err)
		return "", false
	}
	re = re.Simplify()
	check := regexp.MustCompile(pattern)
	maxLen := math.MaxInt
	if v, ok := num(s["maxLength"]); ok {
		maxLen = int(v)
	}
	for range attempts {
		var b strings.Builder
		m.draw(re, &b)
		out := b.String()
		if check.MatchString(out) && utf8.RuneCountInString(out) <= maxLen {
			return out, true
		}
	}
	return "", false
}

func (m *maker) draw(re *syntax.Regexp, b *strings.Builder) {
	switch re.Op {
	case syntax.OpLiteral:
		b.WriteString(string(re.Rune))
	case syntax.OpCharClass:
		b.WriteRune(m.runeOf(re.Rune))
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		b.WriteByte('x')
	case syntax.OpCapture:
		m.draw(re.Sub[0], b)
	case syntax.OpConcat:
		for _, sub := range re.Sub {
			m.draw(sub, b)
		}
	case syntax.OpAlternate:
		m.draw(re.Sub[m.rnd.IntN(len(re.Sub))], b)
	case syntax.OpStar, syntax.OpPlus, syntax.OpQuest, syntax.OpRepeat:
		lo, hi := 0, 3
		switch re.Op {
		case syntax.OpPlus:
			lo = 1
		case syntax.OpQuest:
			hi = 1
		case syntax.OpRepeat:
			lo, hi = re.Min, re.Max
			if hi < 0 || hi > lo+8 {
				hi = lo + 8
			}
		}
		for range lo + m.rnd.IntN(hi-lo+1) {
			m.draw(re.Sub[0], b)
		}
	}
}

// runeOf picks a rune of a class (pairs of ranges), printable ASCII when the class has any.
func (m *maker) runeOf(ranges []rune) rune {
	var ascii [][2]rune
	for i := 0; i+1 < len(ranges); i += 2 {
		lo, hi := max(ranges[i], '!'), min(ranges[i+1], '~')
		if lo <= hi {
			ascii = append(ascii, [2]rune{lo, hi})
		}
	}
	if len(ascii) == 0 {
		return ranges[0]
	}
	r := ascii[m.rnd.IntN(len(ascii))]
	return r[0] + rune(m.rnd.IntN(int(r[1]-r[0])+1))
}
