package server_test

import (
	"bytes"
	"net/http"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"connectrpc.com/connect"

	"better-compute.dev/compute/app/apptest"
	"better-compute.dev/compute/authz"
	sdk "better-compute.dev/compute/sdk/go"
	"better-compute.dev/compute/server"
)

// TestJSONRoutesUnchanged: the JSON mapping's paths, now derived from the (access) options, are
// the very paths and procedures the hand-kept table had (testdata/json_routes.txt).
func TestJSONRoutesUnchanged(t *testing.T) {
	m := server.JSONMapping()
	var got []string
	for route, procedure := range m.Routes {
		got = append(got, m.Prefix+route+" "+procedure)
	}
	sort.Strings(got)
	raw, err := os.ReadFile("testdata/json_routes.txt")
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		if !strings.HasPrefix(line, "#") {
			want = append(want, line)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("JSON routes changed:\ngot  %q\nwant %q", got, want)
	}
}

// TestEveryProcedureIsRegistered: every procedure of the generated descriptors has a JSON route
// (unless it streams or nodes call it with a join token), a permission core knows (unless a join token authenticates it), a mounted
// handler, and a client in both SDKs. The authorization matrix (core) checks its own rows against
// the same list.
func TestEveryProcedureIsRegistered(t *testing.T) {
	known := map[string]bool{string(authz.PlatformManage): true}
	for _, p := range authz.AllPermissions {
		known[string(p)] = true
	}
	procs := server.Procedures()
	if len(procs) < 60 {
		t.Fatalf("only %d procedures in the descriptors", len(procs))
	}
	joinOnly := map[string]bool{} // services every method of which a join token authenticates
	for _, p := range procs {
		a := p.Access
		switch {
		case a == nil:
			t.Errorf("%s has no (access) option", p.Name)
			continue
		case p.Stream && a.GetJsonRoute() != "":
			t.Errorf("%s streams but has JSON route %q", p.Name, a.GetJsonRoute())
		case !p.Stream && !a.GetJoinToken() && a.GetJsonRoute() == "":
			t.Errorf("%s has no JSON route", p.Name)
		case a.GetJoinToken() && a.GetJsonRoute() != "":
			t.Errorf("%s is called by nodes with a join token: it has no JSON route", p.Name)
		case a.GetJoinToken() && a.GetPermission() != "":
			t.Errorf("%s is authenticated by a join token and names permission %q", p.Name, a.GetPermission())
		case !a.GetJoinToken() && !known[a.GetPermission()]:
			t.Errorf("%s names permission %q, which authz does not define", p.Name, a.GetPermission())
		}
		if v, seen := joinOnly[p.Service]; !seen || v {
			joinOnly[p.Service] = a.GetJoinToken()
		}
	}
	if !slices.Equal(server.ServiceNames, serviceSet(procs)) {
		t.Errorf("ServiceNames %v, descriptors %v", server.ServiceNames, serviceSet(procs))
	}

	// Mounted: a call without credentials reaches the service's handler (a Connect answer), not
	// the console's fallback.
	s := apptest.Start(t)
	for _, p := range procs {
		ct := "application/json"
		if p.Stream {
			ct = "application/connect+json"
		}
		resp, err := http.Post(s.App.URL+p.Name, ct, bytes.NewReader([]byte("{}")))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusMethodNotAllowed ||
			!strings.HasPrefix(resp.Header.Get("Content-Type"), "application/") {
			t.Errorf("%s is not mounted: %d %s", p.Name, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
	}

	// The SDKs: sdk/ts/src/services.ts imports every service and sdk/go builds a client of each,
	// but for services only nodes call with a join token.
	ts, err := os.ReadFile("../sdk/ts/src/services.ts")
	if err != nil {
		t.Fatal(err)
	}
	goSDK, err := os.ReadFile("../sdk/go/client.go")
	if err != nil {
		t.Fatal(err)
	}
	for svc, join := range joinOnly {
		short := svc[strings.LastIndex(svc, ".")+1:]
		if join {
			continue
		}
		if !regexp.MustCompile(`(?m)^\s+\w+: ` + short + `,$`).Match(ts) {
			t.Errorf("sdk/ts/src/services.ts does not list %s", short)
		}
		if !bytes.Contains(goSDK, []byte("c.New"+short+"Client(")) {
			t.Errorf("sdk/go/client.go builds no %s client", short)
		}
	}
}

func serviceSet(procs []server.Procedure) []string {
	var out []string
	for _, p := range procs {
		if !slices.Contains(out, p.Service) {
			out = append(out, p.Service)
		}
	}
	return out
}

// TestReasonFallbackAgrees: the transport code -> platform reason fallback exists once per
// client language (sdk.ReasonForCode and reasonByCode in sdk/ts/src/errors.ts; the JSON mapping's
// reasonOfConnectCode agrees with the Go one, errors_internal_test.go); the two tables answer
// alike for every code. Canceled and
// DeadlineExceeded differ by design: the TS client cannot tell a server's from its caller's and
// leaves both to the caller, while Go reads the caller's from the context first.
func TestReasonFallbackAgrees(t *testing.T) {
	src, err := os.ReadFile("../sdk/ts/src/errors.ts")
	if err != nil {
		t.Fatal(err)
	}
	ts := map[string]string{}
	for _, m := range regexp.MustCompile(`\[Code\.(\w+)\]: "(\w+)"`).FindAllSubmatch(src, -1) {
		snake := regexp.MustCompile(`([a-z])([A-Z])`).ReplaceAllString(string(m[1]), "${1}_${2}")
		ts[strings.ToLower(snake)] = string(m[2])
	}
	if len(ts) < 5 {
		t.Fatalf("read only %v from errors.ts", ts)
	}
	for code := connect.CodeCanceled; code <= connect.CodeUnauthenticated; code++ {
		if code == connect.CodeCanceled || code == connect.CodeDeadlineExceeded {
			continue
		}
		want, ok := ts[code.String()]
		if !ok {
			want = "INTERNAL" // toPlatformError's default
		}
		if got := string(sdk.ReasonForCode(code)); got != want {
			t.Errorf("%s: Go %s, TS %s", code, got, want)
		}
	}
}
