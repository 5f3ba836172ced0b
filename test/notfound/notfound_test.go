// Package notfound checks that NOT_FOUND tells nothing: on every procedure that takes an object
// id (enumerated from the generated service descriptors), the answer for an id of another
// tenant's object and for an id that does not exist are byte-identical (apart from the id the
// caller sent, which the message repeats).
package notfound

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"better-compute.dev/compute/app/apptest"
	"better-compute.dev/compute/ids"
)

// prefixOf is the id prefix of each id field of the API.
var prefixOf = map[string]string{
	"load_balancer_id": ids.LoadBalancer, "pool_id": ids.Pool, "project_id": ids.Project, "subnet_id": ids.Subnet,
	"network_id": ids.Network, "certificate_id": ids.Certificate, "instance_id": ids.Instance, "account_id": ids.Account,
	"principal_id": ids.Principal, "token_id": ids.Token, "node_id": ids.MetalNode,
}

func TestNotFoundIsTheSameForAnotherTenantsObjectAndAMissingOne(t *testing.T) {
	s := apptest.Start(t)
	a := s.NewTenant(t, "nf-a", "admin")
	b := s.NewTenant(t, "nf-b", "admin")
	// Objects of tenant b that tenant a's requests name.
	theirs := s.ObjectOfEveryKind(t, b, "theirs")
	// What each procedure needs besides its tenant and the id under test to pass validation, so
	// that the comparison is made where the id is looked up (the id under test overrides).
	fwd := `[{"entryProtocol":"http","entryPort":80,"targetProtocol":"http","targetPort":8080}]`
	base := map[string]string{
		"CreateCertificate":     `"name":"nf","managed":{"dnsNames":["nf.example.com"]}`,
		"CreateInstance":        `"name":"nf","region":"nyc3","flavor":"small","poolId":"` + a.PoolID + `"`,
		"CreateLoadBalancer":    `"name":"nf","region":"nyc3","targets":{"pool":true},"forwarding":` + fwd + `,"idempotencyKey":"nf-1","poolId":"` + a.PoolID + `"`,
		"CreateNetwork":         `"name":"nf"`,
		"CreateSubnet":          `"name":"nf","region":"nyc3","ipRange":"10.9.0.0/24"`,
		"UpdatePool":            `"policy":{"flavors":[{"name":"small","size":"s-1vcpu-1gb"}]}`,
		"SetQuota":              `"resource":"loadBalancers","limit":1`,
		"GrantRole":             `"role":"editor"`,
		"UpdateNodeCredentials": `"username":"u","password":"p"`,
	}

	call := func(procedure, body string) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, s.App.URL+procedure, bytes.NewBufferString(body))
		req.Header.Set("Authorization", "Bearer "+a.Token)
		req.Header.Set("Content-Type", "application/json")
		// Every answer names its request; one id for both calls of a pair keeps the bodies comparable.
		req.Header.Set("X-Request-Id", "notfound-probe")
		resp, err := s.HTTP.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", procedure, err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(raw)
	}
	checked, notFound := 0, 0
	protoregistry.GlobalFiles.RangeFilesByPackage("bettercompute.compute.v1", func(fd protoreflect.FileDescriptor) bool {
		for i := range fd.Services().Len() {
			sd := fd.Services().Get(i)
			for j := range sd.Methods().Len() {
				md := sd.Methods().Get(j)
				if md.IsStreamingServer() || md.IsStreamingClient() {
					continue
				}
				in := md.Input()
				if in.Fields().ByName("tenant_id") == nil {
					continue
				}
				for k := range in.Fields().Len() {
					f := in.Fields().Get(k)
					other, ok := theirs[string(f.Name())]
					if !ok || f.Kind() != protoreflect.StringKind || f.Cardinality() == protoreflect.Repeated {
						continue
					}
					missing := prefixOf[string(f.Name())] + strings.Repeat("0", 26)
					procedure := fmt.Sprintf("/%s/%s", sd.FullName(), md.Name())
					body := func(id string) string {
						extra := base[string(md.Name())]
						// The id under test wins over a base field of the same name.
						extra = strings.ReplaceAll(extra, fmt.Sprintf(`,%q:%q`, f.JSONName(), a.PoolID), "")
						if extra != "" {
							extra += ","
						}
						return fmt.Sprintf(`{"tenantId":%q,%s%q:%q}`, a.ID, extra, f.JSONName(), id)
					}
					// The answer may repeat the id the caller sent; everything else must match.
					st1, b1 := call(procedure, body(missing))
					st2, b2 := call(procedure, body(other))
					b1, b2 = strings.ReplaceAll(b1, missing, "<id>"), strings.ReplaceAll(b2, other, "<id>")
					checked++
					if st1 != st2 || b1 != b2 {
						t.Errorf("%s %s: a missing id answers %d %s but another tenant's answers %d %s", procedure, f.JSONName(), st1, b1, st2, b2)
					}
					if strings.Contains(b1, `"not_found"`) {
						notFound++
					} else {
						t.Logf("not reached: %s %s: %s", procedure, f.JSONName(), b1)
					}
				}
			}
		}
		return true
	})
	t.Logf("%d (procedure, id field) pairs compared, %d answered not_found", checked, notFound)
	// A floor, so that a change making requests fail validation before the lookup (and so
	// compare nothing) fails here instead of passing quietly.
	if checked < 30 || notFound < 24 {
		t.Fatalf("only %d pairs compared and %d reached the lookup", checked, notFound)
	}
}
