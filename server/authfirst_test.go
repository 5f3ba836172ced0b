package server_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"better-compute.dev/compute/app/apptest"
)

// TestCredentialsBeforeContent: a call without valid credentials is answered UNAUTHENTICATED
// whatever its body (invalid, malformed, oversized), on the JSON mapping and on Connect, so an
// anonymous caller learns nothing of the API's rules; every such answer names its request. The
// public paths stay public.
func TestCredentialsBeforeContent(t *testing.T) {
	s := apptest.Start(t)
	huge := `{"tenantId":"` + strings.Repeat("a", 5<<20) + `"}`
	bodies := map[string]string{
		"invalid":   `{"tenantId":"","loadBalancerId":"nope"}`,
		"malformed": `{"tenantId":`,
		"unknown":   `{"noSuchField":1}`,
		"oversized": huge,
		"valid":     `{"tenantId":"acme","loadBalancerId":"lb-0123"}`,
	}
	paths := []string{"/api/compute/loadBalancers/get", "/bettercompute.compute.v1.LoadBalancerService/GetLoadBalancer", "/api/compute/no/such"}
	for _, auth := range []string{"", "Bearer", "Basic dXNlcjpwYXNz", "Bearer not-a-token"} {
		for name, body := range bodies {
			for _, path := range paths {
				req, _ := http.NewRequest(http.MethodPost, s.App.URL+path, strings.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				if auth != "" {
					req.Header.Set("Authorization", auth)
				}
				resp, err := s.HTTP.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				raw, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				var got map[string]any
				_ = json.Unmarshal(raw, &got)
				what := auth + " " + name + " " + path
				if resp.StatusCode != http.StatusUnauthorized {
					t.Errorf("%s: HTTP %d %s, want 401", what, resp.StatusCode, raw)
					continue
				}
				if strings.HasPrefix(path, "/api/") {
					if got["code"] != "UNAUTHENTICATED" || got["requestId"] == nil || got["requestId"] == "" {
						t.Errorf("%s: body %s, want code UNAUTHENTICATED and a requestId", what, raw)
					}
				} else if got["code"] != "unauthenticated" || !bytes.Contains(raw, []byte("google.rpc.ErrorInfo")) {
					t.Errorf("%s: body %s, want unauthenticated with the platform ErrorInfo", what, raw)
				}
				if resp.Header.Get("X-Request-Id") == "" {
					t.Errorf("%s: no X-Request-Id", what)
				}
			}
		}
	}
	// A Connect stream without credentials ends unauthenticated before its request is read.
	req, _ := http.NewRequest(http.MethodPost, s.App.URL+"/bettercompute.compute.v1.EventService/WatchEvents", strings.NewReader("garbage"))
	req.Header.Set("Content-Type", "application/connect+json")
	resp, err := s.HTTP.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !bytes.Contains(raw, []byte(`"unauthenticated"`)) {
		t.Errorf("stream without credentials: %d %q, want unauthenticated", resp.StatusCode, raw)
	}
	// The public paths answer without credentials.
	for _, path := range []string{"/healthz", "/readyz", "/api/compute/openapi.json"} {
		resp, err := s.HTTP.Get(s.App.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s: HTTP %d, want 200 without credentials", path, resp.StatusCode)
		}
	}
}
