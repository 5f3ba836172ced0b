package sdk_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"connectrpc.com/connect"

	"better-compute.dev/compute/app/apptest"
	v1 "better-compute.dev/compute/gen/go/bettercompute/compute/v1"
	"better-compute.dev/compute/requestid"
	sdk "better-compute.dev/compute/sdk/go"
)

// TestRequestIDs: every answer names its request in X-Request-Id (a sane id sent by the caller is
// kept, any other replaced); platform errors carry the same id in ErrorInfo, which the SDK
// exposes, and so does the JSON mapping's error body; every violation reaches the SDK.
func TestRequestIDs(t *testing.T) {
	s := apptest.Start(t)
	tn := s.NewTenant(t, "acme", "editor")

	var header string
	keep := connect.UnaryInterceptorFunc(func(next connect.UnaryFunc) connect.UnaryFunc {
		return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
			req.Header().Set(requestid.Header, "client-chosen.1")
			resp, err := next(ctx, req)
			if resp != nil {
				header = resp.Header().Get(requestid.Header)
			}
			return resp, err
		}
	})
	c := sdk.New(s.App.URL, tn.Token, sdk.WithClientOptions(connect.WithInterceptors(keep)))
	if _, err := c.LoadBalancers.ListLoadBalancers(t.Context(), connect.NewRequest(&v1.ListLoadBalancersRequest{TenantId: tn.ID})); err != nil {
		t.Fatal(err)
	}
	if header != "client-chosen.1" {
		t.Fatalf("success: X-Request-Id %q, want the caller's", header)
	}
	// Two broken rules, both reported; the first is the field.
	_, err := c.LoadBalancers.CreateLoadBalancer(t.Context(), connect.NewRequest(&v1.CreateLoadBalancerRequest{TenantId: tn.ID, PoolId: tn.PoolID,
		Name: "Bad_Name", Region: "nyc3", Targets: &v1.LoadBalancerTargets{},
		Forwarding: []*v1.ForwardingRule{{EntryProtocol: "http", EntryPort: 0, TargetProtocol: "http", TargetPort: 80}}, IdempotencyKey: "rid-1"}))
	var pe *sdk.Error
	if !errors.As(err, &pe) || pe.Code != sdk.InvalidInput || pe.RequestID != "client-chosen.1" || len(pe.Violations) < 2 {
		t.Fatalf("%T %+v", err, pe)
	}
	fields := map[string]bool{}
	for _, v := range pe.Violations {
		fields[v.Field] = true
	}
	if pe.Field != pe.Violations[0].Field || !fields["name"] || !fields["forwarding[0].entryPort"] {
		t.Fatalf("violations %+v (field %q)", pe.Violations, pe.Field)
	}

	// Without an id of its own (or with an unusable one) the caller gets a fresh one, the same
	// in the header and in the error.
	for _, sent := range []string{"", "no spaces; " + strings.Repeat("x", 200)} {
		req, _ := http.NewRequest(http.MethodPost, s.App.URL+"/api/compute/loadBalancers/get", strings.NewReader(`{"tenantId":"`+tn.ID+`","loadBalancerId":"plb_0000000000000000000000000000"}`))
		req.Header.Set("Authorization", "Bearer "+tn.Token)
		if sent != "" {
			req.Header.Set(requestid.Header, sent)
		}
		resp, err := s.HTTP.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var body struct{ Code, RequestID string }
		_ = json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		got := resp.Header.Get(requestid.Header)
		if resp.StatusCode != http.StatusNotFound || body.Code != "NOT_FOUND" || got == "" || got == sent || body.RequestID != got || !requestid.Valid(got) {
			t.Fatalf("sent %q: %d %+v, header %q", sent, resp.StatusCode, body, got)
		}
	}
	// Answers outside the API carry it too.
	resp, err := s.HTTP.Get(s.App.URL + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if !requestid.Valid(resp.Header.Get(requestid.Header)) {
		t.Fatalf("healthz: no request id")
	}
}
