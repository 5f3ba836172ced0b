package openapi

import (
	"slices"
	"strings"

	"buf.build/gen/go/bufbuild/protovalidate/protocolbuffers/go/buf/validate"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Rule is one rule the server enforces on a request that the request's schema does not carry:
// it depends on another field in a way JSON Schema cannot say, on what is stored (the pool's
// regions, a name already taken) or on the state of an object. An operation lists its rules in
// x-rules (and in its description); a refusal with INVALID_INPUT names a field, and that field
// (list indices left out) is the field of one of the operation's rules or lies under it.
type Rule struct {
	// Field is the lowerCamel path of the field the refusal names, without list indices
	// (forwarding.certificateId).
	Field string `json:"field"`
	// Rule says what is refused, for a person to read.
	Rule string `json:"rule"`
}

// unique is the rule of a field whose value must not be taken already.
func unique(field, what string) Rule {
	return Rule{field, "unique: refused when the tenant already has " + what + " with this " + field}
}

// serverRules are the checks core makes on a request besides its protovalidate rules, by request
// message name (each answers INVALID_INPUT naming Field). They are state-dependent or cross-field
// rules JSON Schema cannot carry; keep them in step with core (TestServerRulesNameFields checks
// that each names a field of its request).
var serverRules = map[protoreflect.Name][]Rule{
	"CreateTenantRequest": {
		{"tenantId", "unique: refused when a tenant with this id, or with an id differing from it only in letter case, exists"},
	},
	"CreateProjectRequest":         {unique("name", "a project")},
	"CreatePoolRequest":            {unique("name", "a pool")},
	"CreateProviderAccountRequest": {unique("name", "a provider account")},
	"CreateNetworkRequest":         {unique("name", "a network")},
	"GrantRoleRequest":             {{"objectType", "objectType names a kind of object that takes grants"}},
	"RevokeRoleRequest":            {{"grant.objectType", "grant.objectType names a kind of object that takes grants"}},
	"CreateInstanceRequest": {
		{"region", "the pool offers the region"},
		{"flavor", "the pool's policy has a flavor of this name"},
		{"subnetId", "the subnet is in the instance's region and on the pool's provider account"},
	},
	"CreateLoadBalancerRequest": {
		{"name", "unique: refused when the tenant has a load balancer of this name that is not deleted"},
		{"idempotencyKey", "an idempotencyKey used before names the same request (same body); another request with it is refused"},
		{"region", "a regional load balancer's region is one the pool offers; without region the pool must offer exactly one"},
		{"subnetId", "the subnet is in the load balancer's region and on the pool's provider account"},
		{"targets.instanceIds", "each instance is in the load balancer's region and on its provider account, and all are on one subnet (the load balancer's subnet when subnetId is given)"},
		{"targets.loadBalancerIds", "each load balancer is a regional one of the same provider account that is not being deleted"},
		{"forwarding.certificateId", "the certificate is on the load balancer's provider account"},
		{"domains.certificateId", "the certificate is on the load balancer's provider account"},
	},
	"UpdateLoadBalancerRequest": {
		{"updateMask", "each path names a part an update replaces: targets, forwarding, healthCheck, stickySessions, sourceRanges, redirectHttpToHttps, domains, deletionProtection"},
		{"targets", "targets named by updateMask cannot be removed (null or absent)"},
		{"forwarding", "forwarding named by updateMask, or sent, has 1 to 15 rules"},
		{"domains", "domains are for global load balancers only"},
		{"targets.instanceIds", "each instance is in the load balancer's region and on its provider account, and on the load balancer's subnet"},
		{"targets.loadBalancerIds", "a global load balancer targets loadBalancerIds, each a regional load balancer of the same provider account that is not being deleted; a regional one targets pool or instanceIds"},
		{"forwarding.certificateId", "the certificate is on the load balancer's provider account"},
		{"domains.certificateId", "the certificate is on the load balancer's provider account"},
	},
	"EnrollNodeRequest": {
		unique("name", "a node"),
		unique("bmc.address", "a node"),
		{"bmc.address", "the address resolves to an address the platform may reach (no loopback, link-local, unspecified or the replica's own)"},
		{"bmc.caCertPem", "bmc.caCertPem holds a PEM certificate"},
		{"bmc.systemId", "when the Redfish BMC answers at enrollment: bmc.systemId names one of its systems, and may be left out only when it manages one"},
	},
	"ListUsageRequest": {
		{"endTime", "endTime is after startTime"},
	},
	"JoinNodeRequest": {
		{"nodePool", "the node pool is one of the substrate's"},
		unique("nodeName", "a node"),
	},
}

// rulesOf lists the rules of request md that its schema does not carry: the CEL rules without a
// JSON Schema translation (of md and of every message under it), the page token's, and
// serverRules.
func rulesOf(md protoreflect.MessageDescriptor) []Rule {
	var out []Rule
	celRules(md, "", map[protoreflect.FullName]bool{}, &out)
	if md.Fields().ByName("page_token") != nil {
		out = append(out, Rule{"pageToken", "pageToken is a nextPageToken this list answered for the same tenant and filters"})
	}
	out = append(out, serverRules[md.Name()]...)
	slices.SortStableFunc(out, func(a, b Rule) int { return strings.Compare(a.Field, b.Field) })
	return out
}

// celRules adds the untranslated CEL rules of md (at path) and of the messages under it.
func celRules(md protoreflect.MessageDescriptor, path string, seen map[protoreflect.FullName]bool, out *[]Rule) {
	if seen[md.FullName()] || wellKnown[md.FullName()] != nil {
		return
	}
	seen[md.FullName()] = true
	defer delete(seen, md.FullName())
	join := func(name string) string {
		if path == "" {
			return name
		}
		return path + "." + name
	}
	if mr, ok := proto.GetExtension(md.Options(), validate.E_Message).(*validate.MessageRules); ok {
		for _, r := range mr.GetCel() {
			if _, done := celSchemas[r.GetId()]; done {
				continue
			}
			field := path
			if field == "" {
				// A rule of the request itself is reported on the field its id starts with.
				field, _, _ = strings.Cut(r.GetId(), ".")
			}
			*out = append(*out, Rule{field, celNote(r)})
		}
	}
	fields := md.Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		if rules, ok := proto.GetExtension(fd.Options(), validate.E_Field).(*validate.FieldRules); ok {
			for _, r := range append(slices.Clone(rules.GetCel()), rules.GetRepeated().GetItems().GetCel()...) {
				if _, done := celSchemas[r.GetId()]; !done {
					*out = append(*out, Rule{join(fd.JSONName()), celNote(r)})
				}
			}
		}
		switch {
		case fd.IsMap():
			if fd.MapValue().Message() != nil {
				celRules(fd.MapValue().Message(), join(fd.JSONName()), seen, out)
			}
		case fd.Message() != nil:
			celRules(fd.Message(), join(fd.JSONName()), seen, out)
		}
	}
}

// Covers reports whether rule field covers the field a refusal names (indices and map keys
// removed): the same field or one under it.
func Covers(ruleField, refused string) bool {
	f := StripIndices(refused)
	return f == ruleField || strings.HasPrefix(f, ruleField+".")
}

// StripIndices removes list indices and map keys from a field path (forwarding[0].entryPort ->
// forwarding.entryPort).
func StripIndices(path string) string {
	var b strings.Builder
	depth := 0
	inQuote := false
	for i := 0; i < len(path); i++ {
		c := path[i]
		switch {
		case inQuote:
			if c == '\\' {
				i++
			} else if c == '"' {
				inQuote = false
			}
		case c == '"' && depth > 0:
			inQuote = true
		case c == '[':
			depth++
		case c == ']':
			depth--
		case depth == 0:
			b.WriteByte(c)
		}
	}
	return b.String()
}
