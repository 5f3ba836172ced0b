// Package tenantids checks that every character the API allows in a tenant id works in every
// procedure: a tenant whose id uses '.', '_', ':' and '-' gets the same answers as a tenant with
// a plain id, and never INTERNAL. The authorization engine reads ':' as a separator, so ids are
// encoded before they reach it (authz.EngineID); this walks every procedure of the generated
// descriptors so that no call path can skip the encoding.
package tenantids

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"better-compute.dev/compute/app/apptest"
)

// world is one tenant and an object of every kind a request can name, all its own.
type world struct {
	tenant apptest.Tenant
	// byField maps a request's id field (proto name) to this tenant's object.
	byField map[string]string
}

func build(t *testing.T, s *apptest.Stack, id string) world {
	t.Helper()
	tn := s.NewTenant(t, id, "admin")
	return world{tenant: tn, byField: s.ObjectOfEveryKind(t, tn, "mine")}
}

// answer is what the comparison looks at: the HTTP status and the platform code, with the
// tenant's own ids and tenant id replaced so two tenants' answers compare equal.
type answer struct {
	status int
	code   string
}

func TestEveryProcedureTakesEveryLegalTenantID(t *testing.T) {
	s := apptest.Start(t)
	plain := build(t, s, "tids-plain")
	// Every character class the seed's tenant id pattern allows besides letters and digits.
	special := build(t, s, "tids.odd_1:eu-west")

	fwd := `[{"entryProtocol":"http","entryPort":80,"targetProtocol":"http","targetPort":8080}]`
	// What each procedure needs besides the tenant and its ids to pass validation, so that the
	// call reaches authorization and the store.
	base := map[string]string{
		"CreateCertificate":     `"name":"x","managed":{"dnsNames":["x.example.com"]}`,
		"CreateInstance":        `"name":"x","region":"nyc3","flavor":"small"`,
		"CreateLoadBalancer":    `"name":"x","region":"nyc3","targets":{"pool":true},"forwarding":` + fwd + `,"idempotencyKey":"x-1"`,
		"UpdateLoadBalancer":    `"name":"renamed"`,
		"CreateNetwork":         `"name":"x"`,
		"CreateSubnet":          `"name":"x","region":"nyc3","ipRange":"10.9.0.0/24"`,
		"CreateProject":         `"name":"x"`,
		"CreatePool":            `"name":"x","regions":["nyc3"],"policy":{"flavors":[{"name":"small","size":"s-1vcpu-1gb"}]}`,
		"UpdatePool":            `"policy":{"flavors":[{"name":"small","size":"s-1vcpu-1gb"}]}`,
		"SetQuota":              `"resource":"loadBalancers","limit":3`,
		"GrantRole":             `"role":"viewer"`,
		"RevokeRole":            `"role":"viewer"`,
		"CreatePrincipal":       `"kind":"user","displayName":"x"`,
		"CreateProviderAccount": `"kind":"digitalocean","name":"x2","token":"do-x","apiUrl":"` + s.SimulatorURL + `"`,
		"EnrollNode":            `"name":"x","bmc":{"address":"192.0.2.11","protocol":"redfish","username":"u","password":"p","insecureTls":true}`,
		"UpdateNodeCredentials": `"username":"u","password":"p"`,
	}
	body := func(md protoreflect.MethodDescriptor, w world) string {
		parts := []string{fmt.Sprintf(`"tenantId":%q`, w.tenant.ID)}
		if b := base[string(md.Name())]; b != "" {
			parts = append(parts, b)
		}
		in := md.Input()
		for k := range in.Fields().Len() {
			f := in.Fields().Get(k)
			if id, ok := w.byField[string(f.Name())]; ok && f.Kind() == protoreflect.StringKind && f.Cardinality() != protoreflect.Repeated {
				parts = append(parts, fmt.Sprintf(`%q:%q`, f.JSONName(), id))
			}
		}
		return "{" + strings.Join(parts, ",") + "}"
	}
	call := func(t *testing.T, procedure string, stream bool, token, payload string) answer {
		contentType := "application/json"
		raw := []byte(payload)
		ctx := context.Background()
		if stream {
			var env bytes.Buffer
			env.WriteByte(0)
			_ = binary.Write(&env, binary.BigEndian, uint32(len(raw)))
			env.Write(raw)
			raw, contentType = env.Bytes(), "application/connect+json"
			// A stream that is accepted stays open: its first second is what is compared.
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, time.Second)
			defer cancel()
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.App.URL+procedure, bytes.NewReader(raw))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", contentType)
		resp, err := s.HTTP.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", procedure, err)
		}
		defer resp.Body.Close()
		got, _ := io.ReadAll(resp.Body) // a stream's read ends at the deadline
		if stream {
			// The end-of-stream frame carries the error, if any.
			a := answer{status: resp.StatusCode, code: "open"}
			if i := bytes.Index(got, []byte(`"error"`)); i >= 0 {
				var end struct {
					Error struct {
						Code string `json:"code"`
					} `json:"error"`
				}
				if j := bytes.LastIndexByte(got[:i], '{'); j >= 0 && json.Unmarshal(got[j:], &end) == nil {
					a.code = end.Error.Code
				} else {
					a.code = "error"
				}
			}
			return a
		}
		var e struct {
			Code string `json:"code"`
		}
		_ = json.Unmarshal(got, &e)
		if resp.StatusCode >= 500 {
			t.Logf("%s answered %d: %s", procedure, resp.StatusCode, got)
		}
		return answer{status: resp.StatusCode, code: e.Code}
	}

	var procedures []protoreflect.MethodDescriptor
	protoregistry.GlobalFiles.RangeFilesByPackage("bettercompute.compute.v1", func(fd protoreflect.FileDescriptor) bool {
		for i := range fd.Services().Len() {
			sd := fd.Services().Get(i)
			for j := range sd.Methods().Len() {
				if md := sd.Methods().Get(j); md.Input().Fields().ByName("tenant_id") != nil {
					procedures = append(procedures, md)
				}
			}
		}
		return true
	})
	// Reads first and deletions last, so that most calls find the objects they name.
	rank := func(md protoreflect.MethodDescriptor) int {
		switch n := string(md.Name()); {
		case strings.HasPrefix(n, "Delete"), strings.HasPrefix(n, "Revoke"), strings.HasPrefix(n, "Remove"):
			return 2
		case strings.HasPrefix(n, "Get"), strings.HasPrefix(n, "List"), strings.HasPrefix(n, "Watch"):
			return 0
		}
		return 1
	}
	for _, p := range []struct {
		name  string
		token func(world) string
	}{
		{"tenant admin", func(w world) string { return w.tenant.Token }},
		{"platform admin", func(world) string { return s.AdminToken }},
	} {
		pass, token := p.name, p.token
		compared, reached := 0, 0
		for r := range 3 {
			for _, md := range procedures {
				if rank(md) != r {
					continue
				}
				procedure := fmt.Sprintf("/%s/%s", md.Parent().FullName(), md.Name())
				stream := md.IsStreamingServer()
				a := call(t, procedure, stream, token(plain), body(md, plain))
				b := call(t, procedure, stream, token(special), body(md, special))
				compared++
				if a.status >= 500 || b.status >= 500 || a.code == "internal" || b.code == "internal" {
					t.Errorf("%s %s: answers %+v (plain) and %+v (%s): never INTERNAL", pass, procedure, a, b, special.tenant.ID)
				}
				if a != b {
					t.Errorf("%s %s: plain tenant answers %+v, tenant %q answers %+v", pass, procedure, a, special.tenant.ID, b)
				}
				if a.status == http.StatusOK {
					reached++
				}
			}
		}
		t.Logf("%s: %d procedures compared, %d succeeded for both tenants", pass, compared, reached)
		// A floor: a change that made these requests fail before authorization would otherwise
		// compare nothing of interest.
		if compared < 40 || reached < 15 {
			t.Fatalf("%s: only %d procedures compared and %d succeeded", pass, compared, reached)
		}
	}
}
