// Package sdk is the typed Go client of the Better Compute control plane: one constructor, bearer
// authentication, every service's generated Connect client, platform errors as values, and the
// helpers a program would otherwise write: a waiter, typed states, page iterators, safe retries,
// a default timeout and a resumable event watch. Example (the package's Example test) in short:
//
//	client := sdk.New("https://compute.example", token, sdk.WithTimeout(30*time.Second), sdk.WithRetry(sdk.RetryPolicy{}))
//	created, err := client.LoadBalancers.CreateLoadBalancer(ctx, connect.NewRequest(&v1.CreateLoadBalancerRequest{..., IdempotencyKey: "web-1"}))
//	if pe, ok := sdk.AsError(err); ok && pe.Code == sdk.QuotaExceeded { ... }
//	lb, err := sdk.WaitLoadBalancer(ctx, client, "acme", created.Msg.GetLoadBalancer().GetId(), sdk.WaitOptions{Timeout: 5 * time.Minute})
//	for lb, err := range sdk.LoadBalancerPages(ctx, client.LoadBalancers, &v1.ListLoadBalancersRequest{TenantId: "acme"}) { ... }
//	for ev, err := range sdk.NewWatcher(client.Events, &v1.WatchEventsRequest{TenantId: "acme"}).Events(ctx) { ... }
package sdk

import (
	"context"
	"net/http"
	"time"

	"connectrpc.com/connect"

	c "better-compute.dev/compute/gen/go/bettercompute/compute/v1/computev1connect"
)

// Client holds one client per service.
type Client struct {
	LoadBalancers    c.LoadBalancerServiceClient
	Tenants          c.TenantServiceClient
	Projects         c.ProjectServiceClient
	ProviderAccounts c.ProviderAccountServiceClient
	Pools            c.PoolServiceClient
	Networks         c.NetworkServiceClient
	Certificates     c.CertificateServiceClient
	Instances        c.InstanceServiceClient
	Events           c.EventServiceClient
	Usage            c.UsageServiceClient
	Metal            c.MetalServiceClient
	Substrates       c.SubstrateServiceClient
}

// Option changes New.
type Option func(*options)

type options struct {
	http    connect.HTTPClient
	connect []connect.ClientOption
	retry   *RetryPolicy
	timeout time.Duration
}

// WithHTTPClient sets the transport (for gRPC, one speaking HTTP/2).
func WithHTTPClient(h connect.HTTPClient) Option { return func(o *options) { o.http = h } }

// WithGRPC speaks gRPC instead of the Connect protocol.
func WithGRPC() Option { return func(o *options) { o.connect = append(o.connect, connect.WithGRPC()) } }

// WithClientOptions passes Connect client options through.
func WithClientOptions(opts ...connect.ClientOption) Option {
	return func(o *options) { o.connect = append(o.connect, opts...) }
}

// New returns a client for baseURL authenticating with a bearer token.
func New(baseURL, token string, opts ...Option) *Client {
	o := options{http: http.DefaultClient}
	for _, f := range opts {
		f(&o)
	}
	// Outermost first: the default deadline wraps everything, so a call it ends is the caller's;
	// errors are read once everything else has had its say; retries resend with the credential.
	var ics []connect.Interceptor
	if o.timeout > 0 {
		ics = append(ics, timeoutInterceptor(o.timeout))
	}
	ics = append(ics, platformErrors{})
	if o.retry != nil {
		ics = append(ics, retryInterceptor{*o.retry})
	}
	ics = append(ics, bearer(token))
	co := append([]connect.ClientOption{connect.WithInterceptors(ics...)}, o.connect...)
	h := o.http
	return &Client{
		LoadBalancers:    c.NewLoadBalancerServiceClient(h, baseURL, co...),
		Tenants:          c.NewTenantServiceClient(h, baseURL, co...),
		Projects:         c.NewProjectServiceClient(h, baseURL, co...),
		ProviderAccounts: c.NewProviderAccountServiceClient(h, baseURL, co...),
		Pools:            c.NewPoolServiceClient(h, baseURL, co...),
		Networks:         c.NewNetworkServiceClient(h, baseURL, co...),
		Certificates:     c.NewCertificateServiceClient(h, baseURL, co...),
		Instances:        c.NewInstanceServiceClient(h, baseURL, co...),
		Events:           c.NewEventServiceClient(h, baseURL, co...),
		Usage:            c.NewUsageServiceClient(h, baseURL, co...),
		Metal:            c.NewMetalServiceClient(h, baseURL, co...),
		Substrates:       c.NewSubstrateServiceClient(h, baseURL, co...),
	}
}

// bearer sets the Authorization header on unary calls and streams. The token never appears in
// errors or logs of this package.
type bearer string

func (b bearer) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		req.Header().Set("Authorization", "Bearer "+string(b))
		return next(ctx, req)
	}
}

func (b bearer) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return func(ctx context.Context, spec connect.Spec) connect.StreamingClientConn {
		conn := next(ctx, spec)
		conn.RequestHeader().Set("Authorization", "Bearer "+string(b))
		return conn
	}
}

func (b bearer) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return next
}

// platformErrors returns every failed call's error as *Error, except the caller's own cancel or
// passed deadline, which stay context errors (errors.Is(err, context.DeadlineExceeded)).
type platformErrors struct{}

func (platformErrors) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		resp, err := next(ctx, req)
		return resp, translate(ctx, err)
	}
}

func (platformErrors) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return func(ctx context.Context, spec connect.Spec) connect.StreamingClientConn {
		return &translatedConn{StreamingClientConn: next(ctx, spec), ctx: ctx}
	}
}

func (platformErrors) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return next
}

type translatedConn struct {
	connect.StreamingClientConn
	ctx context.Context
}

func (c *translatedConn) Send(m any) error { return translate(c.ctx, c.StreamingClientConn.Send(m)) }
func (c *translatedConn) Receive(m any) error {
	return translate(c.ctx, c.StreamingClientConn.Receive(m))
}
func (c *translatedConn) CloseResponse() error {
	return translate(c.ctx, c.StreamingClientConn.CloseResponse())
}
