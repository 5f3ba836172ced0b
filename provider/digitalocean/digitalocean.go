// Package digitalocean implements provider.Provider on DigitalOcean through godo.
//
// Every call is one or a few API requests and returns at once; asynchronous outcomes (a load
// balancer going active, its address arriving) are observed by the reconciler on a later Get.
// godo is built without its retry layer, because a retried POST would create a second load
// balancer: retrying is the reconciler's decision, made with provider.Retryable. Requests of
// one token share a client-side rate limiter that stays under DigitalOcean's per-minute budget
// and pauses when the rate headers say the hourly budget is spent.
package digitalocean

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/digitalocean/godo"
	"golang.org/x/oauth2"

	"better-compute.dev/compute/observe"
	"better-compute.dev/compute/provider"
	"better-compute.dev/compute/redact"
)

// Kind is the provider.Account.Kind this package serves.
const Kind = "digitalocean"

// Defaults for Options.
const (
	DefaultRequestTimeout    = 30 * time.Second
	DefaultRequestsPerMinute = 240
	DefaultBurst             = 10
	DefaultMaxRateWait       = 10 * time.Second
	DefaultPageSize          = 200
)

// Options tunes the client. Zero fields take the defaults above.
type Options struct {
	// Transport is the base HTTP transport; nil means a shared clone of http.DefaultTransport.
	Transport http.RoundTripper
	// RequestTimeout bounds one HTTP exchange (a timeout maps to provider.ErrTransient).
	RequestTimeout time.Duration
	// RequestsPerMinute is the most requests a token sends in any rolling minute (burst
	// included); DigitalOcean allows 250.
	RequestsPerMinute int
	// Burst is how many requests may go out back to back.
	Burst int
	// MaxRateWait is the longest a call waits for the rate limiter; a longer wait (or one past
	// the context's deadline) returns a *provider.RateLimitedError without sending. Negative
	// means never wait.
	MaxRateWait time.Duration
	// PageSize is per_page for list requests (DigitalOcean's maximum is 200).
	PageSize int
	// Limiters shares rate limiters between providers; nil means the process-wide registry,
	// so every Provider of one token in this process draws from one budget.
	Limiters *Limiters
	// UserAgent is prefixed to godo's user agent.
	UserAgent string
	// Budget, when set, keeps each token's request bucket in the database, shared by every
	// replica (DigitalOcean's limit is per token, not per process); nil keeps it per process.
	Budget SharedBudget
}

func (o Options) withDefaults() Options {
	if o.Transport == nil {
		o.Transport = sharedTransport
	}
	if o.RequestTimeout <= 0 {
		o.RequestTimeout = DefaultRequestTimeout
	}
	if o.RequestsPerMinute <= 0 {
		o.RequestsPerMinute = DefaultRequestsPerMinute
	}
	if o.Burst <= 0 {
		o.Burst = DefaultBurst
	}
	if o.MaxRateWait == 0 {
		o.MaxRateWait = DefaultMaxRateWait
	}
	if o.PageSize <= 0 || o.PageSize > DefaultPageSize {
		o.PageSize = DefaultPageSize
	}
	if o.Limiters == nil {
		o.Limiters = defaultLimiters
	}
	if o.UserAgent == "" {
		o.UserAgent = "better-compute"
	}
	return o
}

// sharedTransport keeps one connection pool for every provider built with default options.
var sharedTransport http.RoundTripper = http.DefaultTransport.(*http.Transport).Clone()

// client is provider.Provider for one DigitalOcean account.
type client struct {
	godo     *godo.Client
	token    string          // never printed
	scrub    redact.Scrubber // removes the token (in every encoding) from error text
	pageSize int
}

var _ provider.Provider = (*client)(nil)

// New opens a provider for account. account.Endpoint, when set, is the API base URL (the
// simulator); empty means DigitalOcean's public API.
func New(account provider.Account, opts Options) (provider.Provider, error) {
	if account.Kind != "" && account.Kind != Kind {
		return nil, fmt.Errorf("digitalocean: account %s is of kind %q: %w", account.ID, account.Kind, provider.ErrInvalid)
	}
	token := strings.TrimSpace(account.Token)
	if token == "" {
		return nil, fmt.Errorf("digitalocean: account %s has no API token: %w", account.ID, provider.ErrInvalid)
	}
	opts = opts.withDefaults()
	limited := &limitedTransport{
		// Below the limiter: one span and one bc_provider_requests_total sample per request sent.
		base:    observe.ProviderTransport(Kind, opts.Transport),
		limiter: opts.Limiters.forToken(token, opts.RequestsPerMinute, opts.Burst, opts.Budget),
		maxWait: opts.MaxRateWait,
	}
	httpClient := &http.Client{
		Timeout: opts.RequestTimeout,
		Transport: &oauth2.Transport{
			Source: oauth2.StaticTokenSource(&oauth2.Token{AccessToken: token, TokenType: "Bearer"}),
			Base:   limited,
		},
	}
	clientOpts := []godo.ClientOpt{godo.SetUserAgent(opts.UserAgent)}
	if account.Endpoint != "" {
		base := account.Endpoint
		if !strings.HasSuffix(base, "/") {
			base += "/"
		}
		clientOpts = append(clientOpts, godo.SetBaseURL(base))
	}
	// No godo.WithRetryAndBackoffs: see the package comment.
	godoClient, err := godo.New(httpClient, clientOpts...)
	if err != nil {
		return nil, fmt.Errorf("digitalocean: account %s: bad endpoint: %w", account.ID, errors.Join(provider.ErrInvalid, err))
	}
	return &client{godo: godoClient, token: token, scrub: redact.New(token), pageSize: opts.PageSize}, nil
}

// Open opens a provider with default options; it is a provider.Factory.
func Open(_ context.Context, account provider.Account) (provider.Provider, error) {
	return New(account, Options{})
}

var _ provider.Factory = Open

// NewFactory returns a provider.Factory that opens providers with opts.
func NewFactory(opts Options) provider.Factory {
	return func(_ context.Context, account provider.Account) (provider.Provider, error) {
		return New(account, opts)
	}
}

// LoadBalancers returns the load balancer client.
func (p *client) LoadBalancers() provider.LoadBalancers { return loadBalancers{p} }

// Networks returns the VPC client.
func (p *client) Networks() provider.Networks { return networks{p} }

// Certificates returns the certificate client.
func (p *client) Certificates() provider.Certificates { return certificates{p} }

// Machines returns the droplet client.
func (p *client) Machines() provider.Machines { return machines{p} }
