package server_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"better-compute.dev/compute/app/apptest"
	"better-compute.dev/compute/core"
	"better-compute.dev/compute/core/events"
	"better-compute.dev/compute/netguard"
	"better-compute.dev/compute/server"
)

// rawPost sends a POST with a chunked body written as given and returns the status line and body.
func rawPost(t *testing.T, base, token, path, contentType, chunked string) (int, string) {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: %s\r\nAuthorization: Bearer %s\r\nTransfer-Encoding: chunked\r\n\r\n%s", path, contentType, token, chunked)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestBrokenBodiesAreTheCallersMistake: a body whose chunked encoding is broken, or that is too
// large, is answered INVALID_INPUT on the JSON mapping and invalid_argument on Connect, once the
// caller is authenticated (TestCredentialsBeforeContent covers the anonymous caller).
func TestBrokenBodiesAreTheCallersMistake(t *testing.T) {
	s := apptest.Start(t)
	const bad = "zz\r\nabc\r\n0\r\n\r\n"
	status, body := rawPost(t, s.App.URL, s.AdminToken, "/api/compute/loadBalancers/get", "application/json", bad)
	if status != http.StatusBadRequest || !strings.Contains(body, `"INVALID_INPUT"`) {
		t.Errorf("JSON mapping: %d %s, want 400 INVALID_INPUT", status, body)
	}
	status, body = rawPost(t, s.App.URL, s.AdminToken, "/bettercompute.compute.v1.LoadBalancerService/GetLoadBalancer", "application/json", bad)
	if status != http.StatusBadRequest || !strings.Contains(body, `"invalid_argument"`) {
		t.Errorf("Connect: %d %s, want 400 invalid_argument", status, body)
	}
	big := bytes.Repeat([]byte("a"), server.MaxBodyBytes+10)
	for _, path := range []string{"/api/compute/loadBalancers/get", "/bettercompute.compute.v1.LoadBalancerService/GetLoadBalancer"} {
		req, _ := http.NewRequest(http.MethodPost, s.App.URL+path, bytes.NewReader(big))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+s.AdminToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || !bytes.Contains(bytes.ToLower(b), []byte("invalid")) {
			t.Errorf("%s with an oversized body: %d %s, want 400 invalid input", path, resp.StatusCode, b)
		}
	}
}

// TestBearerSchemeIsCaseInsensitive: "bearer" and "BEARER" are the Bearer scheme (RFC 9110).
func TestBearerSchemeIsCaseInsensitive(t *testing.T) {
	s := apptest.Start(t)
	tn := s.NewTenant(t, "scheme", "viewer")
	for _, scheme := range []string{"Bearer", "bearer", "BEARER"} {
		req, _ := http.NewRequest(http.MethodPost, s.App.URL+"/api/compute/loadBalancers/list", strings.NewReader(fmt.Sprintf(`{"tenantId":%q}`, tn.ID)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", scheme+" "+tn.Token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("scheme %q: HTTP %d, want 200", scheme, resp.StatusCode)
		}
	}
}

// TestPanickingHandlerAnswersInternalAndServesOn: a handler that panics (here: a service with no
// database behind it) answers INTERNAL, logs the panic, and the replica keeps serving.
func TestPanickingHandlerAnswersInternalAndServesOn(t *testing.T) {
	var logs bytes.Buffer
	h, err := server.New(server.Options{Services: server.NewServices(core.NewBase(nil, nil, nil, nil, netguard.Policy{}), nil, events.Options{}), Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(h)
	defer hs.Close()
	for range 2 {
		for _, path := range []string{"/api/compute/loadBalancers/list", "/bettercompute.compute.v1.LoadBalancerService/ListLoadBalancers"} {
			req, _ := http.NewRequest(http.MethodPost, hs.URL+path, strings.NewReader(`{"tenantId":"acme"}`))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer bct_x")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatalf("%s: the replica stopped serving: %v", path, err)
			}
			var e struct{ Code string }
			_ = json.NewDecoder(resp.Body).Decode(&e)
			resp.Body.Close()
			if resp.StatusCode != http.StatusInternalServerError || !strings.EqualFold(e.Code, "internal") {
				t.Errorf("%s: HTTP %d %q, want 500 internal", path, resp.StatusCode, e.Code)
			}
		}
	}
	if !strings.Contains(logs.String(), "handler panicked") {
		t.Errorf("the panic was not logged: %s", logs.String())
	}
}

// TestTenantIDsDifferingOnlyInCaseAreRefused: "tb" and "TB" cannot both exist.
func TestTenantIDsDifferingOnlyInCaseAreRefused(t *testing.T) {
	s := apptest.Start(t)
	for _, tc := range []struct {
		id     string
		status int
	}{
		{"tb", http.StatusOK}, {"TB", http.StatusBadRequest}, {"Tb", http.StatusBadRequest}, {"tb", http.StatusBadRequest}, {"tb2", http.StatusOK},
	} {
		status, body := s.PostJSON(t, "/api/compute/tenants/create", s.AdminToken, map[string]any{"tenantId": tc.id, "displayName": tc.id})
		if status != tc.status {
			t.Errorf("create tenant %q: %d %v, want %d", tc.id, status, body, tc.status)
			continue
		}
		if status != http.StatusOK && (body["code"] != "INVALID_INPUT" || body["field"] != "tenantId") {
			t.Errorf("create tenant %q: %v, want INVALID_INPUT naming tenantId", tc.id, body)
		}
	}
}

// TestGzipBodiesOnEveryProtocol: a gzip Content-Encoding body is accepted on the JSON mapping as on
// Connect, and a gzip bomb is refused at the same decompressed bound.
func TestGzipBodiesOnEveryProtocol(t *testing.T) {
	s := apptest.Start(t)
	tn := s.NewTenant(t, "zipped", "viewer")
	gz := func(b []byte) []byte {
		var buf bytes.Buffer
		w := gzip.NewWriter(&buf)
		_, _ = w.Write(b)
		_ = w.Close()
		return buf.Bytes()
	}
	for _, tc := range []struct {
		name, path string
		body       []byte
		status     int
	}{
		{"json mapping", "/api/compute/loadBalancers/list", gz([]byte(`{"tenantId":"` + tn.ID + `"}`)), http.StatusOK},
		{"connect", "/bettercompute.compute.v1.LoadBalancerService/ListLoadBalancers", gz([]byte(`{"tenantId":"` + tn.ID + `"}`)), http.StatusOK},
		{"json mapping bomb", "/api/compute/loadBalancers/list", gz(bytes.Repeat([]byte(" "), server.MaxBodyBytes+1)), http.StatusBadRequest},
		{"json mapping not gzip", "/api/compute/loadBalancers/list", []byte("not gzip"), http.StatusBadRequest},
	} {
		req, _ := http.NewRequest(http.MethodPost, s.App.URL+tc.path, bytes.NewReader(tc.body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Content-Encoding", "gzip")
		req.Header.Set("Authorization", "Bearer "+tn.Token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.status {
			t.Errorf("%s: HTTP %d %s, want %d", tc.name, resp.StatusCode, b, tc.status)
		}
	}
}
