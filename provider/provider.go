// Package provider defines the seam between the reconcilers and a cloud provider account.
//
// The reconcilers (reconcile/) own the desired state, read from the database; an implementation
// (provider/digitalocean) only translates that state into provider calls. Every method is
// idempotent and non-blocking: it starts work at the provider and reports what it observed, and
// the reconciler comes back later for the asynchronous outcome. provider/ never imports store/.
package provider

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Errors an implementation returns, wrapped with %w, so reconcilers can branch without knowing
// the provider's wire format.
var (
	// ErrNotFound: the provider has no such resource (already deleted, or never made).
	ErrNotFound = errors.New("provider: not found")
	// ErrInvalid: the provider refused the request itself; retrying the same request cannot help.
	ErrInvalid = errors.New("provider: invalid request")
	// ErrBusy: the resource is processing an earlier action; retry after it settles.
	ErrBusy error = &transientError{"provider: resource busy"}
	// ErrTransient: 5xx, timeouts, connection failures; retry with backoff.
	ErrTransient error = &transientError{"provider: transient failure"}
	// ErrDeferred: a low-priority request (see WithLowPriority) was not sent because the
	// request budget is short and kept for other work; nothing was asked of the provider.
	ErrDeferred error = &transientError{"provider: deferred while the request budget is short"}
)

type lowPriorityKey struct{}

// WithLowPriority marks the requests made with ctx as low priority: status polls, which can
// wait, as opposed to creates and changes. A low-priority request is sent only when the
// request budget has room to spare, and otherwise fails at once with ErrDeferred, so polls
// never take the budget creates are waiting for.
func WithLowPriority(ctx context.Context) context.Context {
	return context.WithValue(ctx, lowPriorityKey{}, true)
}

// WithNormalPriority undoes WithLowPriority: a list whose first page was granted as a poll
// reads its remaining pages at normal priority, since a half-read list is wasted.
func WithNormalPriority(ctx context.Context) context.Context {
	if !LowPriority(ctx) {
		return ctx
	}
	return context.WithValue(ctx, lowPriorityKey{}, false)
}

// LowPriority reports whether ctx was marked with WithLowPriority.
func LowPriority(ctx context.Context) bool {
	v, _ := ctx.Value(lowPriorityKey{}).(bool)
	return v
}

// PollGrant is how a provider's limiter let a low-priority request through, for the caller
// to pace its next poll by: Spare when the request budget had room beyond its reserve (no
// request was waiting for it), not Spare when the polls' small credit paid for it.
type PollGrant struct {
	Spare bool
}

type pollGrantKey struct{}

// WithPollGrant asks the limiter to report into g how it let ctx's first low-priority request
// through.
func WithPollGrant(ctx context.Context, g *PollGrant) context.Context {
	return context.WithValue(ctx, pollGrantKey{}, g)
}

// PollGrantOf returns the PollGrant ctx carries, or nil.
func PollGrantOf(ctx context.Context) *PollGrant {
	g, _ := ctx.Value(pollGrantKey{}).(*PollGrant)
	return g
}

// RateLimitedError reports a 429. RetryAfter is when the provider says the budget returns.
type RateLimitedError struct {
	RetryAfter time.Time
}

func (e *RateLimitedError) Error() string {
	return fmt.Sprintf("provider: rate limited until %s", e.RetryAfter.UTC().Format(time.RFC3339))
}

// RetryAt is when the budget returns: the reconcile runner retries the item then
// (reconcile.RetryAtError).
func (e *RateLimitedError) RetryAt() time.Time { return e.RetryAfter }

// Transient reports true: waiting for the budget is expected, not the resource's failure
// (reconcile.TransientError).
func (e *RateLimitedError) Transient() bool { return true }

// transientError is a failure expected to pass on its own (ErrBusy, ErrTransient,
// ErrDeferred): the reconcile runner retries it with backoff without showing it to the tenant.
type transientError struct{ msg string }

func (e *transientError) Error() string { return e.msg }

// Transient reports true (reconcile.TransientError).
func (e *transientError) Transient() bool { return true }

// Retryable reports whether err is worth retrying later with backoff.
func Retryable(err error) bool {
	var rl *RateLimitedError
	return errors.As(err, &rl) || errors.Is(err, ErrBusy) || errors.Is(err, ErrTransient) || errors.Is(err, ErrDeferred)
}

// Account identifies one provider account and the credential to reach it. The token is never
// logged: Account has no String method on purpose and must not be passed to a logger.
type Account struct {
	ID       string // our account id (pacct_...)
	Kind     string // "digitalocean"
	Token    string // unsealed API token, only in memory
	Endpoint string // API base URL; empty means the provider's public API
}

// Factory opens a Provider for an account.
type Factory func(ctx context.Context, account Account) (Provider, error)

// Provider is ProviderImpl: one accessor per resource family.
type Provider interface {
	LoadBalancers() LoadBalancers
	Networks() Networks
	Certificates() Certificates
	Machines() Machines
}

// Scope of a load balancer.
type Scope string

const (
	ScopeRegional Scope = "regional"
	ScopeGlobal   Scope = "global"
)

// ForwardingRule maps an entry port/protocol to a target port/protocol.
type ForwardingRule struct {
	EntryProtocol  string // http, https, http2, tcp, udp
	EntryPort      int
	TargetProtocol string
	TargetPort     int
	CertificateID  string // provider certificate id; empty for plain or passthrough rules
	TLSPassthrough bool
}

// HealthCheck as the provider applies it. Zero numbers mean the provider's default.
type HealthCheck struct {
	Protocol           string // http, https, tcp
	Port               int
	Path               string
	IntervalSeconds    int
	TimeoutSeconds     int
	HealthyThreshold   int
	UnhealthyThreshold int
}

// StickySessions by cookie.
type StickySessions struct {
	CookieName string
	TTLSeconds int
}

// Domain a global load balancer serves.
type Domain struct {
	Name          string
	CertificateID string // provider certificate id, may be empty
}

// LoadBalancerSpec is the whole desired state; Update sends all of it (a provider PUT replaces).
type LoadBalancerSpec struct {
	Name                  string // deterministic provider-side name: the adoption key
	Scope                 Scope
	Region                string // regional only
	NetworkID             string // provider VPC id; empty means the account's default network
	MachineIDs            []string
	TargetLoadBalancerIDs []string // global only: provider ids of regional load balancers
	Forwarding            []ForwardingRule
	HealthCheck           *HealthCheck
	StickySessions        *StickySessions
	AllowSources          []string // CIDRs or addresses
	DenySources           []string
	RedirectHTTPToHTTPS   bool
	Domains               []Domain
}

// LoadBalancerStatus is what the provider reports.
type LoadBalancerStatus string

const (
	LoadBalancerNew     LoadBalancerStatus = "new"
	LoadBalancerActive  LoadBalancerStatus = "active"
	LoadBalancerErrored LoadBalancerStatus = "errored"
)

// LoadBalancer is an observation of a load balancer at the provider.
type LoadBalancer struct {
	ID                    string
	Name                  string
	Status                LoadBalancerStatus
	Address               string // IPv4, empty until assigned
	AddressV6             string
	Region                string
	NetworkID             string
	MachineIDs            []string
	TargetLoadBalancerIDs []string
	Spec                  LoadBalancerSpec // the provider's current settings, as far as it reports them
}

// LoadBalancers is ProviderImpl.loadBalancers.
type LoadBalancers interface {
	Get(ctx context.Context, id string) (*LoadBalancer, error)
	// FindByName returns the load balancer with that exact name, or ErrNotFound; used to adopt
	// what a replica that died mid-create made.
	FindByName(ctx context.Context, name string) (*LoadBalancer, error)
	// List returns every load balancer of the account in as few requests as the provider
	// allows (DigitalOcean: pages of up to 200), so that a reconciler polling many load
	// balancers pays one request per page instead of one per load balancer.
	List(ctx context.Context) ([]*LoadBalancer, error)
	Create(ctx context.Context, spec LoadBalancerSpec) (*LoadBalancer, error)
	Update(ctx context.Context, id string, spec LoadBalancerSpec) (*LoadBalancer, error)
	// Delete is idempotent: deleting what is gone returns nil.
	Delete(ctx context.Context, id string) error
}

// NetworkSpec is a VPC.
type NetworkSpec struct {
	Name    string
	Region  string
	IPRange string // CIDR
}

// Network is an observed VPC.
type Network struct {
	ID      string
	Name    string
	Region  string
	IPRange string
}

// Networks is ProviderImpl.networks (VPCs).
type Networks interface {
	Get(ctx context.Context, id string) (*Network, error)
	FindByName(ctx context.Context, name string) (*Network, error)
	Create(ctx context.Context, spec NetworkSpec) (*Network, error)
	Delete(ctx context.Context, id string) error
}

// CertificateSpec is custom (PEM) or managed (domain names).
type CertificateSpec struct {
	Name             string
	Managed          bool
	DNSNames         []string // managed
	PrivateKeyPEM    string   // custom; never logged
	LeafCertPEM      string
	CertificateChain string
}

// CertificateState as the provider reports it.
type CertificateState string

const (
	CertificatePending  CertificateState = "pending"
	CertificateVerified CertificateState = "verified"
	CertificateError    CertificateState = "error"
)

// Certificate is an observed certificate.
type Certificate struct {
	ID    string
	Name  string
	State CertificateState
}

// Certificates is ProviderImpl.certificates.
type Certificates interface {
	Get(ctx context.Context, id string) (*Certificate, error)
	FindByName(ctx context.Context, name string) (*Certificate, error)
	Create(ctx context.Context, spec CertificateSpec) (*Certificate, error)
	Delete(ctx context.Context, id string) error
}

// MachineSpec is a droplet.
type MachineSpec struct {
	Name      string
	Region    string
	Size      string
	Image     string
	NetworkID string // provider VPC id; empty means the account's default network
}

// MachineStatus as the provider reports it.
type MachineStatus string

const (
	MachineNew    MachineStatus = "new"
	MachineActive MachineStatus = "active"
	MachineOff    MachineStatus = "off"
)

// Machine is an observed droplet.
type Machine struct {
	ID        string
	Name      string
	Status    MachineStatus
	Region    string
	NetworkID string
}

// Machines is ProviderImpl.machines (droplets).
type Machines interface {
	Get(ctx context.Context, id string) (*Machine, error)
	FindByName(ctx context.Context, name string) (*Machine, error)
	Create(ctx context.Context, spec MachineSpec) (*Machine, error)
	Delete(ctx context.Context, id string) error
}
