package metal_test

import (
	"errors"
	"strings"
	"testing"

	"buf.build/go/protovalidate"
	"google.golang.org/protobuf/proto"

	v1 "better-compute.dev/compute/gen/go/bettercompute/compute/v1"
)

// TestMetalSchemaRules checks the protovalidate rules of metal.proto, which the server's
// interceptor applies before core sees a request.
func TestMetalSchemaRules(t *testing.T) {
	t.Parallel()
	v, err := protovalidate.New()
	if err != nil {
		t.Fatal(err)
	}
	const node = "mnode_01hzx7q3k9v2m5n8p4r6s0t1w3"
	enroll := func(edit func(*v1.EnrollNodeRequest)) proto.Message {
		r := &v1.EnrollNodeRequest{TenantId: "acme", Name: "rack1-u12", Bmc: &v1.MetalBmcSettings{
			Address: "10.0.0.5", Port: 443, Protocol: "redfish", Username: "admin", Password: "s3cret!", InsecureTls: true,
		}}
		if edit != nil {
			edit(r)
		}
		return r
	}
	for _, tc := range []struct {
		reason string
		msg    proto.Message
		field  string // the first violation's field path; "" means valid
	}{
		{"a valid enrollment", enroll(nil), ""},
		{"a host name", enroll(func(r *v1.EnrollNodeRequest) { r.Bmc.Address = "bmc-12.rack1.example.net" }), ""},
		{"an IPv6 address", enroll(func(r *v1.EnrollNodeRequest) { r.Bmc.Address = "2001:db8::12" }), ""},
		{"no port means the default", enroll(func(r *v1.EnrollNodeRequest) { r.Bmc.Port = 0 }), ""},
		{"ipmi", enroll(func(r *v1.EnrollNodeRequest) { r.Bmc.Protocol = "ipmi" }), ""},
		{"an address with a scheme", enroll(func(r *v1.EnrollNodeRequest) { r.Bmc.Address = "https://10.0.0.5" }), "bmc.address"},
		{"an address with a port", enroll(func(r *v1.EnrollNodeRequest) { r.Bmc.Address = "10.0.0.5:443" }), "bmc.address"},
		{"an empty address", enroll(func(r *v1.EnrollNodeRequest) { r.Bmc.Address = "" }), "bmc.address"},
		{"port 65536", enroll(func(r *v1.EnrollNodeRequest) { r.Bmc.Port = 65536 }), "bmc.port"},
		{"a negative port", enroll(func(r *v1.EnrollNodeRequest) { r.Bmc.Port = -1 }), "bmc.port"},
		{"an unknown protocol", enroll(func(r *v1.EnrollNodeRequest) { r.Bmc.Protocol = "snmp" }), "bmc.protocol"},
		{"no protocol", enroll(func(r *v1.EnrollNodeRequest) { r.Bmc.Protocol = "" }), "bmc.protocol"},
		{"no username", enroll(func(r *v1.EnrollNodeRequest) { r.Bmc.Username = "" }), "bmc.username"},
		{"a username with a space", enroll(func(r *v1.EnrollNodeRequest) { r.Bmc.Username = "ad min" }), "bmc.username"},
		{"a 65-character username", enroll(func(r *v1.EnrollNodeRequest) { r.Bmc.Username = strings.Repeat("u", 65) }), "bmc.username"},
		{"no password", enroll(func(r *v1.EnrollNodeRequest) { r.Bmc.Password = "" }), "bmc.password"},
		{"a 257-character password", enroll(func(r *v1.EnrollNodeRequest) { r.Bmc.Password = strings.Repeat("p", 257) }), "bmc.password"},
		{"no bmc", enroll(func(r *v1.EnrollNodeRequest) { r.Bmc = nil }), "bmc"},
		{"insecure TLS with a pinned CA", enroll(func(r *v1.EnrollNodeRequest) { r.Bmc.CaCertPem = "-----BEGIN CERTIFICATE-----" }), "bmc"},
		{"an upper-case name", enroll(func(r *v1.EnrollNodeRequest) { r.Name = "Rack1" }), "name"},
		{"a bad tenant id", enroll(func(r *v1.EnrollNodeRequest) { r.TenantId = "acme corp" }), "tenantId"},
		{"a verb on a well-formed node id", &v1.DeployNodeRequest{TenantId: "acme", NodeId: node, Image: "https://img.example/u24.qcow2"}, ""},
		{"a verb on another type's id", &v1.InspectNodeRequest{TenantId: "acme", NodeId: "plb_01hzx7q3k9v2m5n8p4r6s0t1w3"}, "nodeId"},
		{"a verb on a short id", &v1.AbortNodeRequest{TenantId: "acme", NodeId: "mnode_123"}, "nodeId"},
		{"an image with a space", &v1.DeployNodeRequest{TenantId: "acme", NodeId: node, Image: "my image"}, "image"},
		{"new credentials without a password", &v1.UpdateNodeCredentialsRequest{TenantId: "acme", NodeId: node, Username: "root"}, "password"},
		{"a list filter that is no state name", &v1.ListNodesRequest{TenantId: "acme", State: "Ready!"}, "state"},
	} {
		err := v.Validate(tc.msg)
		if tc.field == "" {
			if err != nil {
				t.Errorf("%s: %v", tc.reason, err)
			}
			continue
		}
		var ve *protovalidate.ValidationError
		if !errors.As(err, &ve) || len(ve.Violations) == 0 {
			t.Errorf("%s: want a violation on %s, got %v", tc.reason, tc.field, err)
			continue
		}
		got := protovalidate.FieldPathString(ve.Violations[0].Proto.GetField())
		if got == "" {
			// A message-level rule: its id starts with the field it is about.
			got = strings.SplitN(ve.Violations[0].Proto.GetRuleId(), ".", 2)[0]
		}
		if camel(got) != tc.field {
			t.Errorf("%s: first violation on %q (%v), want %s", tc.reason, got, err, tc.field)
		}
		if strings.Contains(err.Error(), "s3cret!") {
			t.Errorf("%s: the violation quotes the password: %v", tc.reason, err)
		}
	}
}

// camel turns a snake_case field path into the API's camelCase.
func camel(path string) string {
	var b strings.Builder
	up := false
	for _, r := range path {
		switch {
		case r == '_':
			up = true
		case up:
			b.WriteString(strings.ToUpper(string(r)))
			up = false
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
