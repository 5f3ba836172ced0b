package web_test

import (
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"better-compute.dev/compute/app/apptest"
)

// TestConsoleIsServedAndAPIRoutesKeepPrecedence: the real server serves the embedded console at /
// and its assets, while every API, health and metrics route answers as before.
func TestConsoleIsServedAndAPIRoutesKeepPrecedence(t *testing.T) {
	s := apptest.Start(t)
	get := func(method, path, contentType, body string) (*http.Response, string) {
		t.Helper()
		req, err := http.NewRequest(method, s.App.URL+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if contentType != "" {
			req.Header.Set("Content-Type", contentType)
		}
		resp, err := s.HTTP.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		return resp, string(raw)
	}

	resp, page := get(http.MethodGet, "/", "", "")
	if resp.StatusCode != 200 || !strings.Contains(page, `<div id="app"></div>`) || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("GET /: %d %s\n%s", resp.StatusCode, resp.Header.Get("Content-Type"), page)
	}
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || !strings.Contains(csp, "frame-ancestors 'none'") {
		t.Fatalf("GET /: CSP %q", csp)
	}
	if resp.Header.Get("Cache-Control") != "no-cache" {
		t.Fatalf("GET /: Cache-Control %q", resp.Header.Get("Cache-Control"))
	}
	// Every asset the page names is served, hashed names cached for good.
	assets := regexp.MustCompile(`(?:src|href)="(/assets/[^"]+)"`).FindAllStringSubmatch(page, -1)
	if len(assets) < 2 {
		t.Fatalf("the page names %d assets: %s", len(assets), page)
	}
	for _, m := range assets {
		resp, body := get(http.MethodGet, m[1], "", "")
		if resp.StatusCode != 200 || len(body) == 0 || !strings.Contains(resp.Header.Get("Cache-Control"), "immutable") {
			t.Fatalf("GET %s: %d, %d bytes, Cache-Control %q", m[1], resp.StatusCode, len(body), resp.Header.Get("Cache-Control"))
		}
		if strings.HasSuffix(m[1], ".js") && !strings.Contains(resp.Header.Get("Content-Type"), "javascript") {
			t.Fatalf("GET %s: Content-Type %q", m[1], resp.Header.Get("Content-Type"))
		}
	}

	// The API keeps its routes: Connect, the JSON mapping, health and metrics answer as themselves.
	if resp, body := get(http.MethodPost, "/bettercompute.compute.v1.LoadBalancerService/ListLoadBalancers", "application/json", `{"tenantId":"x"}`); resp.StatusCode != 401 || !strings.Contains(body, "unauthenticated") {
		t.Fatalf("Connect route: %d %s", resp.StatusCode, body)
	}
	if resp, body := get(http.MethodPost, "/api/compute/loadBalancers/list", "application/json", `{"tenantId":"x"}`); resp.StatusCode != 401 || !strings.Contains(body, "UNAUTHENTICATED") {
		t.Fatalf("JSON route: %d %s", resp.StatusCode, body)
	}
	if resp, _ := get(http.MethodGet, "/healthz", "", ""); resp.StatusCode != 200 {
		t.Fatalf("/healthz: %d", resp.StatusCode)
	}
	if resp, body := get(http.MethodGet, "/metrics", "", ""); resp.StatusCode != 200 || strings.Contains(body, `id="app"`) {
		t.Fatalf("/metrics: %d", resp.StatusCode)
	}
	// What is neither stays 404, for any method; the console answers only GET and HEAD.
	for _, c := range []struct{ method, path string }{
		{http.MethodGet, "/nothing-here"}, {http.MethodGet, "/assets/missing.js"}, {http.MethodPost, "/"},
		{http.MethodGet, "/assets/"}, {http.MethodDelete, "/index.html"},
	} {
		if resp, _ := get(c.method, c.path, "", ""); resp.StatusCode != 404 {
			t.Errorf("%s %s: %d, want 404", c.method, c.path, resp.StatusCode)
		}
	}
}
