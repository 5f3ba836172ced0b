package openapi

// The CEL rules of the protos that JSON Schema can say, by rule id, in JSON Schema. A rule found
// here is written into the schema it belongs to and is not repeated in an operation's x-rules; a
// CEL rule missing here is listed in x-rules (with its message) for the caller to read.
// TestCELSchemasAgreeWithProtovalidate checks each translation against protovalidate on
// requests that keep and break the rule.

// celSchema is one translation: schema is added to the schema of the message (a message rule)
// or of the value (a field or item rule); required says the value must be sent, because the
// rule refuses the zero value an absent field reads as.
type celSchema struct {
	schema   map[string]any
	required bool
}

// set says "the field is present with a value that counts as given": true, a non-empty list or
// string.
func set(field string, value map[string]any) map[string]any {
	return map[string]any{"required": []any{field}, "properties": map[string]any{field: value}}
}

var (
	nonEmptyList   = map[string]any{"minItems": 1}
	nonEmptyString = map[string]any{"minLength": 1}
	emptyString    = map[string]any{"maxLength": 0}
	isTrue         = map[string]any{"const": true}
	scopeGlobal    = set("scope", map[string]any{"const": "global"})
	tlsEntry       = set("entryProtocol", map[string]any{"enum": []any{"https", "http2"}})
)

// ipv4Octet matches one decimal octet, 0 to 255, without leading zeros (as Go's netip reads it).
const ipv4Octet = `(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])`

var celSchemas = map[string]celSchema{
	// LoadBalancerTargets: (pool true) + (instanceIds non-empty) + (loadBalancerIds non-empty) == 1.
	"targets.exactly_one": {schema: map[string]any{"oneOf": []any{
		set("pool", isTrue), set("instanceIds", nonEmptyList), set("loadBalancerIds", nonEmptyList),
	}}},
	// ForwardingRule.
	"forwarding.tls": {schema: map[string]any{"if": tlsEntry, "then": map[string]any{"anyOf": []any{
		set("certificateId", nonEmptyString),
		map[string]any{"required": []any{"entryProtocol", "tlsPassthrough"},
			"properties": map[string]any{"entryProtocol": map[string]any{"const": "https"}, "tlsPassthrough": isTrue}},
	}}}},
	"forwarding.passthrough": {schema: map[string]any{"if": set("tlsPassthrough", isTrue), "then": map[string]any{
		"required": []any{"entryProtocol", "targetProtocol"},
		"properties": map[string]any{"entryProtocol": map[string]any{"const": "https"},
			"targetProtocol": map[string]any{"const": "https"}, "certificateId": emptyString},
	}}},
	"forwarding.certificate": {schema: map[string]any{"if": set("certificateId", nonEmptyString), "then": tlsEntry}},
	// An item of sourceRanges.allow / deny.
	"source_range": {schema: map[string]any{"anyOf": []any{
		map[string]any{"format": "ipv4"}, map[string]any{"format": "ipv6"}, map[string]any{"format": FormatIPNetwork},
	}}},
	// CreateLoadBalancerRequest.
	"targets.scope": {schema: map[string]any{
		"if": scopeGlobal,
		"then": map[string]any{"properties": map[string]any{"targets": map[string]any{"anyOf": []any{
			map[string]any{"type": "null"}, set("loadBalancerIds", nonEmptyList)}}}},
		"else": map[string]any{"properties": map[string]any{"targets": map[string]any{"anyOf": []any{
			map[string]any{"type": "null"}, map[string]any{"not": set("loadBalancerIds", nonEmptyList)}}}}},
	}},
	"domains.global_only": {schema: map[string]any{"if": scopeGlobal, "else": map[string]any{
		"properties": map[string]any{"domains": map[string]any{"maxItems": 0}}}}},
	"region.global": {schema: map[string]any{"if": scopeGlobal, "then": map[string]any{
		"properties": map[string]any{"region": emptyString, "subnetId": emptyString}}}},
	// EnrollNodeRequest.
	"bmc.tls": {schema: map[string]any{"not": set("bmc", map[string]any{
		"required":   []any{"insecureTls", "caCertPem"},
		"properties": map[string]any{"insecureTls": isTrue, "caCertPem": nonEmptyString},
	})}},
	// MetalBmcSettings.
	"bmc.system_id": {schema: map[string]any{"if": set("systemId", nonEmptyString), "then": set("protocol", map[string]any{"const": "redfish"})}},
	// CreateSubnetRequest.ip_range: the pattern bounds the prefix length, the format asks for
	// zero host bits.
	"subnet.ip_range": {required: true, schema: map[string]any{
		"pattern": "^" + ipv4Octet + `(\.` + ipv4Octet + "){3}/(1[6-9]|2[0-8])$",
		"format":  FormatIPNetwork,
	}},
	// GrantRoleRequest: a tenant role has no object, an object level names one.
	"objectType.grant": {schema: map[string]any{
		"if":   set("role", map[string]any{"enum": []any{"admin", "editor", "viewer"}}),
		"then": map[string]any{"properties": map[string]any{"objectType": emptyString, "objectId": emptyString}},
		"else": map[string]any{"required": []any{"objectType", "objectId"},
			"properties": map[string]any{"objectType": nonEmptyString, "objectId": nonEmptyString}},
	}},
}

// FormatIPNetwork is the document's format of a CIDR block whose host bits are zero
// (10.0.0.0/8, 2001:db8::/32; not 10.0.0.1/8), as protovalidate's isIpPrefix(true) takes it.
const FormatIPNetwork = "ip-network"
