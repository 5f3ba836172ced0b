package openapi

import (
	"bytes"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"buf.build/go/protovalidate"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/dynamicpb"

	"buf.build/gen/go/bufbuild/protovalidate/protocolbuffers/go/buf/validate"
	"google.golang.org/protobuf/proto"

	"better-compute.dev/compute/metal"
)

const pkg = "bettercompute.compute.v1."

func message(t *testing.T, name string) protoreflect.MessageDescriptor {
	t.Helper()
	d, err := protoregistry.GlobalFiles.FindDescriptorByName(protoreflect.FullName(name))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return d.(protoreflect.MessageDescriptor)
}

// TestServerRulesNameFields keeps serverRules honest: each rule names a field of its request.
func TestServerRulesNameFields(t *testing.T) {
	for name, rules := range serverRules {
		md := message(t, pkg+string(name))
		for _, r := range rules {
			cur := md
			for _, part := range strings.Split(r.Field, ".") {
				if cur == nil {
					t.Errorf("%s: rule field %s goes below a scalar", name, r.Field)
					break
				}
				fd := cur.Fields().ByJSONName(part)
				if fd == nil {
					t.Errorf("%s: rule field %s: no field %s", name, r.Field, part)
					break
				}
				cur = fd.Message()
			}
		}
	}
}

// TestEveryTranslationNamesARule: a translation whose CEL rule is gone would describe a rule the
// server no longer has.
func TestEveryTranslationNamesARule(t *testing.T) {
	ids := map[string]bool{}
	protoregistry.GlobalFiles.RangeFilesByPackage("bettercompute.compute.v1", func(fd protoreflect.FileDescriptor) bool {
		var walk func(protoreflect.MessageDescriptors)
		walk = func(ms protoreflect.MessageDescriptors) {
			for i := 0; i < ms.Len(); i++ {
				md := ms.Get(i)
				if mr, ok := proto.GetExtension(md.Options(), validate.E_Message).(*validate.MessageRules); ok {
					for _, r := range mr.GetCel() {
						ids[r.GetId()] = true
					}
				}
				for j := 0; j < md.Fields().Len(); j++ {
					if fr, ok := proto.GetExtension(md.Fields().Get(j).Options(), validate.E_Field).(*validate.FieldRules); ok {
						for _, r := range append(fr.GetCel(), fr.GetRepeated().GetItems().GetCel()...) {
							ids[r.GetId()] = true
						}
					}
				}
				walk(md.Messages())
			}
		}
		walk(fd.Messages())
		return true
	})
	for id := range celSchemas {
		if !ids[id] {
			t.Errorf("celSchemas translates %s, which no proto rule has", id)
		}
	}
}

// TestCELSchemasAgreeWithProtovalidate sends requests that keep and break each translated CEL
// rule to protovalidate and to the document's schema: both take or both refuse each one.
func TestCELSchemasAgreeWithProtovalidate(t *testing.T) {
	id := func(prefix string) string { return prefix + strings.Repeat("0", 26) }
	lb := `"tenantId":"t","poolId":"` + id("pool_") + `","name":"web","idempotencyKey":"k1","forwarding":[{"entryProtocol":"http","entryPort":80,"targetProtocol":"http","targetPort":80}]`
	fwd := func(rule string) string {
		return `{"tenantId":"t","poolId":"` + id("pool_") + `","name":"web","idempotencyKey":"k1","targets":{"pool":true},"forwarding":[` + rule + `]}`
	}
	sub := func(r string) string {
		return `{"tenantId":"t","networkId":"` + id("net_") + `","name":"a","region":"nyc3","ipRange":"` + r + `"}`
	}
	grant := func(rest string) string { return `{"tenantId":"t","principalId":"` + id("prn_") + `",` + rest + `}` }
	bmc := func(rest string) string {
		return `{"tenantId":"t","name":"n1","bmc":{"address":"192.0.2.1","protocol":"redfish","username":"u","password":"p"` + rest + `}}`
	}
	cases := []struct{ msg, body string }{
		{"CreateLoadBalancerRequest", `{` + lb + `,"targets":{"pool":true}}`},
		{"CreateLoadBalancerRequest", `{` + lb + `,"targets":{"pool":false}}`},
		{"CreateLoadBalancerRequest", `{` + lb + `,"targets":{}}`},
		{"CreateLoadBalancerRequest", `{` + lb + `,"targets":{"pool":true,"instanceIds":["` + id("inst_") + `"]}}`},
		{"CreateLoadBalancerRequest", `{` + lb + `,"targets":{"instanceIds":["` + id("inst_") + `"]}}`},
		{"CreateLoadBalancerRequest", `{` + lb + `,"targets":{"instanceIds":[],"pool":true}}`},
		{"CreateLoadBalancerRequest", `{` + lb + `,"targets":{"loadBalancerIds":["` + id("plb_") + `"]}}`},
		{"CreateLoadBalancerRequest", `{` + lb + `,"scope":"global","targets":{"loadBalancerIds":["` + id("plb_") + `"]}}`},
		{"CreateLoadBalancerRequest", `{` + lb + `,"scope":"global","targets":{"pool":true}}`},
		{"CreateLoadBalancerRequest", `{` + lb + `,"scope":"global","region":"nyc3","targets":{"loadBalancerIds":["` + id("plb_") + `"]}}`},
		{"CreateLoadBalancerRequest", `{` + lb + `,"scope":"regional","targets":{"pool":true},"domains":[{"name":"www.example.com"}]}`},
		{"CreateLoadBalancerRequest", `{` + lb + `,"scope":"global","targets":{"loadBalancerIds":["` + id("plb_") + `"]},"domains":[{"name":"www.example.com"}]}`},
		{"CreateLoadBalancerRequest", `{` + lb + `,"sourceRanges":{"allow":["10.0.0.0/8","192.0.2.1","2001:db8::/32"]},"targets":{"pool":true}}`},
		{"CreateLoadBalancerRequest", `{` + lb + `,"sourceRanges":{"allow":["10.0.0.1/8"]},"targets":{"pool":true}}`},
		{"CreateLoadBalancerRequest", `{` + lb + `,"sourceRanges":{"deny":["nonsense"]},"targets":{"pool":true}}`},
		{"CreateLoadBalancerRequest", fwd(`{"entryProtocol":"https","entryPort":443,"targetProtocol":"http","targetPort":80}`)},
		{"CreateLoadBalancerRequest", fwd(`{"entryProtocol":"https","entryPort":443,"targetProtocol":"http","targetPort":80,"certificateId":"` + id("pcert_") + `"}`)},
		{"CreateLoadBalancerRequest", fwd(`{"entryProtocol":"https","entryPort":443,"targetProtocol":"https","targetPort":443,"tlsPassthrough":true}`)},
		{"CreateLoadBalancerRequest", fwd(`{"entryProtocol":"https","entryPort":443,"targetProtocol":"http","targetPort":80,"tlsPassthrough":true}`)},
		{"CreateLoadBalancerRequest", fwd(`{"entryProtocol":"http2","entryPort":443,"targetProtocol":"http","targetPort":80,"tlsPassthrough":true}`)},
		{"CreateLoadBalancerRequest", fwd(`{"entryProtocol":"https","entryPort":443,"targetProtocol":"https","targetPort":443,"tlsPassthrough":true,"certificateId":"` + id("pcert_") + `"}`)},
		{"CreateLoadBalancerRequest", fwd(`{"entryProtocol":"http","entryPort":80,"targetProtocol":"http","targetPort":80,"certificateId":"` + id("pcert_") + `"}`)},
		{"CreateSubnetRequest", sub("10.0.0.0/16")},
		{"CreateSubnetRequest", sub("10.0.0.0/28")},
		{"CreateSubnetRequest", sub("10.0.0.0/15")},
		{"CreateSubnetRequest", sub("10.0.0.0/29")},
		{"CreateSubnetRequest", sub("10.0.0.16/24")},
		{"CreateSubnetRequest", sub("10.0.0.0/99")},
		{"CreateSubnetRequest", sub("256.0.0.0/24")},
		{"CreateSubnetRequest", sub("")},
		{"CreateSubnetRequest", `{"tenantId":"t","networkId":"` + id("net_") + `","name":"a","region":"nyc3"}`},
		{"GrantRoleRequest", grant(`"role":"viewer"`)},
		{"GrantRoleRequest", grant(`"role":"viewer","objectType":"project","objectId":"` + id("prj_") + `"`)},
		{"GrantRoleRequest", grant(`"role":"reader"`)},
		{"GrantRoleRequest", grant(`"role":"reader","objectType":"project","objectId":"` + id("prj_") + `"`)},
		{"GrantRoleRequest", grant(`"role":"manager","objectType":"project"`)},
		{"EnrollNodeRequest", bmc(`,"insecureTls":true`)},
		{"EnrollNodeRequest", bmc(`,"insecureTls":true,"caCertPem":"x"`)},
		{"EnrollNodeRequest", bmc(`,"caCertPem":"x"`)},
		{"EnrollNodeRequest", bmc(`,"systemId":"1"`)},
		{"EnrollNodeRequest", `{"tenantId":"t","name":"n1","bmc":{"address":"192.0.2.1","protocol":"ipmi","username":"u","password":"p","systemId":"1"}}`},
	}
	raw, err := jsonschema.UnmarshalJSON(bytes.NewReader(Document))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	c.RegisterFormat(&jsonschema.Format{Name: FormatIPNetwork, Validate: func(v any) error {
		s, ok := v.(string)
		if !ok {
			return nil
		}
		p, err := netip.ParsePrefix(s)
		if err != nil || p.Masked() != p {
			return fmt.Errorf("%q is not a CIDR block with zero host bits", s)
		}
		return nil
	}})
	for _, f := range []string{"int32", "int64", "uint64", "hostname-or-ip"} {
		c.RegisterFormat(&jsonschema.Format{Name: f, Validate: func(any) error { return nil }})
	}
	if err := c.AddResource("mem://doc.json", raw); err != nil {
		t.Fatal(err)
	}
	validator, err := protovalidate.New()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range cases {
		md := message(t, pkg+tc.msg)
		m := dynamicpb.NewMessage(md)
		if err := protojson.Unmarshal([]byte(tc.body), m); err != nil {
			t.Fatalf("%s %s: %v", tc.msg, tc.body, err)
		}
		pvErr := validator.Validate(m)
		sch, err := c.Compile("mem://doc.json" + Ref(pkg+tc.msg))
		if err != nil {
			t.Fatal(err)
		}
		inst, _ := jsonschema.UnmarshalJSON(strings.NewReader(tc.body))
		jsErr := sch.Validate(inst)
		if (pvErr == nil) != (jsErr == nil) {
			t.Errorf("%s %s: protovalidate says %v, the document says %v", tc.msg, tc.body, pvErr, jsErr)
		}
	}
}

// TestNodeStatesInStep: the document's list of provision states a node list filters by is
// metal's, so a state the server knows is never refused by the schema and the reverse.
func TestNodeStatesInStep(t *testing.T) {
	fd := message(t, pkg+"ListNodesRequest").Fields().ByName("state")
	rules, _ := proto.GetExtension(fd.Options(), validate.E_Field).(*validate.FieldRules)
	var want []string
	for _, s := range metal.States() {
		want = append(want, string(s))
	}
	if got := rules.GetString().GetIn(); !slices.Equal(got, want) {
		t.Errorf("ListNodesRequest.state in %v, metal.States %v", got, want)
	}
}
