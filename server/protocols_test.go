package server_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"connectrpc.com/grpcreflect"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/protobuf/reflect/protoreflect"

	"better-compute.dev/compute/app/apptest"
	v1 "better-compute.dev/compute/gen/go/bettercompute/compute/v1"
	"better-compute.dev/compute/gen/go/bettercompute/compute/v1/computev1connect"
	"better-compute.dev/compute/server"
)

// h2c is an HTTP client speaking HTTP/2 without TLS, as gRPC clients do against bc-server.
func h2c() *http.Client {
	p := new(http.Protocols)
	p.SetUnencryptedHTTP2(true)
	return &http.Client{Transport: &http.Transport{Protocols: p}, Timeout: 30 * time.Second}
}

func bearer(token string) connect.ClientOption {
	return connect.WithInterceptors(bearerAuth(token))
}

// bearerAuth sets the Authorization header on unary calls and on streams.
type bearerAuth string

func (b bearerAuth) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		req.Header().Set("Authorization", "Bearer "+string(b))
		return next(ctx, req)
	}
}

func (b bearerAuth) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return func(ctx context.Context, spec connect.Spec) connect.StreamingClientConn {
		conn := next(ctx, spec)
		conn.RequestHeader().Set("Authorization", "Bearer "+string(b))
		return conn
	}
}

func (b bearerAuth) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return next
}

// createRequest is a valid create whose name follows from key (names are unique per tenant).
func createRequest(tn apptest.Tenant, key string) *v1.CreateLoadBalancerRequest {
	pool := true
	name := strings.Trim(strings.Map(func(r rune) rune {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			return r
		}
		return '-'
	}, strings.ToLower("web-"+key)), "-")
	if len(name) > 42 {
		name = strings.TrimRight(name[:42], "-")
	}
	return &v1.CreateLoadBalancerRequest{
		TenantId: tn.ID, PoolId: tn.PoolID, Name: name, Region: "nyc3",
		Targets:        &v1.LoadBalancerTargets{Pool: &pool},
		Forwarding:     []*v1.ForwardingRule{{EntryProtocol: "http", EntryPort: 80, TargetProtocol: "http", TargetPort: 8080}},
		IdempotencyKey: key,
	}
}

// TestProtocols runs the same calls over Connect, gRPC and gRPC-Web against a running server,
// including a platform error with its ErrorInfo.
func TestProtocols(t *testing.T) {
	s := apptest.Start(t)
	tn := s.NewTenant(t, "acme", "editor")
	for _, tc := range []struct {
		name string
		opt  connect.ClientOption
	}{
		{"connect", connect.WithProtoJSON()},
		{"connect-proto", connect.WithClientOptions()},
		{"grpc", connect.WithGRPC()},
		{"grpc-web", connect.WithGRPCWeb()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := computev1connect.NewLoadBalancerServiceClient(h2c(), s.App.URL, tc.opt, bearer(tn.Token))
			created, err := c.CreateLoadBalancer(t.Context(), connect.NewRequest(createRequest(tn, "key-"+tc.name)))
			if err != nil {
				t.Fatal(err)
			}
			lb := created.Msg.GetLoadBalancer()
			if lb.GetState() != "pending" || lb.GetScope() != "regional" || lb.GetRegion() != "nyc3" {
				t.Fatalf("created %v", lb)
			}
			got, err := c.GetLoadBalancer(t.Context(), connect.NewRequest(&v1.GetLoadBalancerRequest{TenantId: tn.ID, LoadBalancerId: lb.GetId()}))
			if err != nil || got.Msg.GetLoadBalancer().GetId() != lb.GetId() {
				t.Fatalf("get: %v %v", got, err)
			}
			_, err = c.GetLoadBalancer(t.Context(), connect.NewRequest(&v1.GetLoadBalancerRequest{TenantId: tn.ID, LoadBalancerId: "plb_01m8vjp5r2ph80akzhx2janz7c"}))
			assertPlatformError(t, err, connect.CodeNotFound, "NOT_FOUND", "loadBalancerId")
			bad := createRequest(tn, "key-bad")
			bad.Forwarding[0].EntryPort = 0
			_, err = c.CreateLoadBalancer(t.Context(), connect.NewRequest(bad))
			assertPlatformError(t, err, connect.CodeInvalidArgument, "INVALID_INPUT", "forwarding[0].entryPort")
		})
	}
	t.Run("unauthenticated", func(t *testing.T) {
		c := computev1connect.NewLoadBalancerServiceClient(h2c(), s.App.URL, connect.WithGRPC())
		_, err := c.ListLoadBalancers(t.Context(), connect.NewRequest(&v1.ListLoadBalancersRequest{TenantId: tn.ID}))
		assertPlatformError(t, err, connect.CodeUnauthenticated, "UNAUTHENTICATED", "")
	})
}

func assertPlatformError(t *testing.T, err error, code connect.Code, reason, field string) {
	t.Helper()
	var ce *connect.Error
	if !errors.As(err, &ce) || ce.Code() != code {
		t.Fatalf("error %v, want code %v", err, code)
	}
	for _, d := range ce.Details() {
		v, derr := d.Value()
		if info, ok := v.(*errdetails.ErrorInfo); derr == nil && ok {
			if info.GetReason() != reason || info.GetDomain() != "compute.better-compute.dev" || info.GetMetadata()["field"] != field {
				t.Fatalf("ErrorInfo %v, want reason %s field %q", info, reason, field)
			}
			return
		}
	}
	t.Fatalf("no google.rpc.ErrorInfo in %v", err)
}

// TestJSONMappingLifecycle walks create, get, list, update and delete with plain JSON as curl
// sends it, at the seed's paths.
func TestJSONMappingLifecycle(t *testing.T) {
	s := apptest.Start(t)
	tn := s.NewTenant(t, "acme", "editor")
	body := map[string]any{
		"tenantId": tn.ID, "poolId": tn.PoolID, "name": "web", "region": "nyc3", "targets": map[string]any{"pool": true},
		"forwarding":     []any{map[string]any{"entryProtocol": "http", "entryPort": 80, "targetProtocol": "http", "targetPort": 8080}},
		"idempotencyKey": "k1",
	}
	status, got := s.PostJSON(t, "/api/compute/loadBalancers/create", tn.Token, body)
	if status != http.StatusOK {
		t.Fatalf("create: %d %v", status, got)
	}
	lb := got["loadBalancer"].(map[string]any)
	id := lb["id"].(string)
	if lb["state"] != "pending" || lb["region"] != "nyc3" {
		t.Fatalf("create answer %v", lb)
	}
	status, got = s.PostJSON(t, "/api/compute/loadBalancers/get", tn.Token, map[string]any{"tenantId": tn.ID, "loadBalancerId": id})
	if status != http.StatusOK || got["loadBalancer"].(map[string]any)["id"] != id {
		t.Fatalf("get: %d %v", status, got)
	}
	status, got = s.PostJSON(t, "/api/compute/loadBalancers/update", tn.Token, map[string]any{
		"tenantId": tn.ID, "loadBalancerId": id, "redirectHttpToHttps": true,
	})
	if status != http.StatusOK || got["loadBalancer"].(map[string]any)["redirectHttpToHttps"] != true {
		t.Fatalf("update: %d %v", status, got)
	}
	status, got = s.PostJSON(t, "/api/compute/loadBalancers/list", tn.Token, map[string]any{"tenantId": tn.ID})
	if status != http.StatusOK || len(got["loadBalancers"].([]any)) != 1 {
		t.Fatalf("list: %d %v", status, got)
	}
	status, got = s.PostJSON(t, "/api/compute/loadBalancers/delete", tn.Token, map[string]any{"tenantId": tn.ID, "loadBalancerId": id})
	if status != http.StatusOK || got["loadBalancer"].(map[string]any)["state"] != "deleting" {
		t.Fatalf("delete: %d %v", status, got)
	}
	status, got = s.PostJSON(t, "/api/compute/loadBalancers/nope", tn.Token, map[string]any{})
	if status != http.StatusNotFound || got["code"] != "NOT_FOUND" {
		t.Fatalf("unknown method: %d %v", status, got)
	}
}

// TestHealthReflectionMetricsCORS checks the operational endpoints grpcurl, buf curl, Prometheus
// and browsers rely on.
func TestHealthReflectionMetricsCORS(t *testing.T) {
	s := apptest.Start(t)
	status, got := s.PostJSON(t, "/grpc.health.v1.Health/Check", "", map[string]any{"service": computev1connect.LoadBalancerServiceName})
	if st, _ := got["status"].(string); status != http.StatusOK || !strings.HasSuffix(st, "SERVING") {
		t.Fatalf("health: %d %v", status, got)
	}
	rc := grpcreflect.NewClient(h2c(), s.App.URL, connect.WithGRPC())
	stream := rc.NewStream(t.Context())
	names, err := stream.ListServices()
	if err != nil {
		t.Fatal(err)
	}
	_, _ = stream.Close()
	for _, want := range server.ServiceNames {
		if !slices.Contains(names, protoreflect.FullName(want)) {
			t.Errorf("reflection does not list %s (%v)", want, names)
		}
	}
	resp, err := http.Get(s.App.URL + "/metrics")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("metrics: %v %v", resp, err)
	}
	resp.Body.Close()
	req, _ := http.NewRequest(http.MethodOptions, s.App.URL+"/"+computev1connect.LoadBalancerServiceName+"/ListLoadBalancers", nil)
	req.Header.Set("Origin", "http://app.example")
	req.Header.Set("Access-Control-Request-Method", "POST")
	req.Header.Set("Access-Control-Request-Headers", "authorization,content-type,connect-protocol-version")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent || resp.Header.Get("Access-Control-Allow-Origin") != "http://app.example" {
		t.Fatalf("preflight: %d %v", resp.StatusCode, resp.Header)
	}
}
