package app

import (
	"fmt"
	"time"

	"better-compute.dev/compute/provider/digitalocean"
	"better-compute.dev/compute/reconcile"
	"better-compute.dev/compute/reconcile/vps"
)

// ReconcileConfig tunes a replica's reconcilers (Config.Reconcilers). The zero value is
// production's defaults; tests and benchmarks shorten the lease and the polls. cmd/bc-server
// fills it from the BC_* variables named on the fields.
type ReconcileConfig struct {
	// Concurrency is how many resources this replica reconciles at once (BC_RECONCILE_CONCURRENCY).
	Concurrency int
	// LeaseTTL is how long a lease lasts without renewal (BC_LEASE_TTL, e.g. "30s").
	LeaseTTL time.Duration
	// PollInterval is the pause after a claim found nothing due (BC_RECONCILE_POLL).
	PollInterval time.Duration
	// PeriodicInterval is the period of the pass that queues every live load balancer
	// (BC_PERIODIC_INTERVAL; default one minute, at most five).
	PeriodicInterval time.Duration
	// BackoffInitial and BackoffMax pace retries after failures (BC_RECONCILE_BACKOFF,
	// BC_RECONCILE_BACKOFF_MAX).
	BackoffInitial, BackoffMax time.Duration
	// ProviderPoll and DependencyPoll: how soon a pass comes back while the provider works or
	// a dependency is not ready (BC_PROVIDER_POLL, BC_DEPENDENCY_POLL).
	ProviderPoll, DependencyPoll time.Duration
	// CreateWindow bounds a create request (BC_CREATE_WINDOW); it is kept under half the lease.
	CreateWindow time.Duration
	// DigitalOcean tunes the godo client: BC_DO_REQUESTS_PER_MINUTE, BC_DO_BURST,
	// BC_DO_REQUEST_TIMEOUT.
	DigitalOcean digitalocean.Options
	// MetalPowerSettle bounds how long a metal workflow waits, after each power change, for the
	// BMC to report it (BC_METAL_POWER_SETTLE; default bmc.DefaultPowerSettle).
	MetalPowerSettle time.Duration
	// Retention says how long events, idempotency records, idle work items and closed usage
	// are kept (BC_*_RETENTION).
	Retention RetentionConfig
	// JoinURL is the public base URL bcd on substrate nodes calls to join (BC_PUBLIC_URL); empty
	// means this replica's own listener address.
	JoinURL string
}

// PublicURL is the URL bcd reaches the join API at: BC_PUBLIC_URL, else fallback.
func (c ReconcileConfig) PublicURL(fallback string) string {
	if c.JoinURL != "" {
		return c.JoinURL
	}
	return fallback
}

// WithDefaults fills the zero fields and checks the periodic interval's bound.
func (c ReconcileConfig) WithDefaults() (ReconcileConfig, error) {
	if c.LeaseTTL <= 0 {
		c.LeaseTTL = reconcile.DefaultLeaseTTL
	}
	if c.PeriodicInterval <= 0 {
		c.PeriodicInterval = vps.DefaultPeriodicInterval
	}
	if c.PeriodicInterval > vps.MaxPeriodicInterval {
		return c, fmt.Errorf("reconcile configuration: periodic interval %v exceeds %v", c.PeriodicInterval, vps.MaxPeriodicInterval)
	}
	if c.BackoffInitial <= 0 {
		c.BackoffInitial = time.Second
	}
	if c.BackoffMax <= 0 {
		c.BackoffMax = 5 * time.Minute
	}
	if c.CreateWindow <= 0 {
		c.CreateWindow = vps.DefaultCreateWindow
	}
	// A create must not outlive half the lease: see vps.Options.CreateWindow.
	c.CreateWindow = min(c.CreateWindow, c.LeaseTTL/2)
	if c.DigitalOcean.RequestTimeout <= 0 || c.DigitalOcean.RequestTimeout > c.LeaseTTL/2 {
		c.DigitalOcean.RequestTimeout = min(digitalocean.DefaultRequestTimeout, c.LeaseTTL/2)
	}
	return c, nil
}
