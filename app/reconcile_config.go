package app

import (
	"fmt"
	"os"
	"strconv"
	"time"

	"better-compute.dev/compute/provider/digitalocean"
	"better-compute.dev/compute/reconcile"
	"better-compute.dev/compute/reconcile/providers/provresources"
)

// ReconcileConfig tunes a replica's reconcilers. The zero value is production's defaults; tests
// and benchmarks shorten the lease and the polls. It is read from the environment (see
// ReconcileConfigFromEnv) because the replica's Config has no field for it yet.
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

// ReconcileConfigFromEnv reads the BC_* knobs named on ReconcileConfig's fields with getenv
// (os.Getenv when nil); unset ones keep the defaults.
func ReconcileConfigFromEnv(getenv func(string) string) (ReconcileConfig, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	var c ReconcileConfig
	var errs []error
	dur := func(name string, into *time.Duration) {
		if v := getenv(name); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				errs = append(errs, fmt.Errorf("%s=%q is not a positive duration", name, v))
				return
			}
			*into = d
		}
	}
	num := func(name string, into *int) {
		if v := getenv(name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n <= 0 {
				errs = append(errs, fmt.Errorf("%s=%q is not a positive number", name, v))
				return
			}
			*into = n
		}
	}
	c.JoinURL = getenv("BC_PUBLIC_URL")
	num("BC_RECONCILE_CONCURRENCY", &c.Concurrency)
	dur("BC_LEASE_TTL", &c.LeaseTTL)
	dur("BC_RECONCILE_POLL", &c.PollInterval)
	dur("BC_PERIODIC_INTERVAL", &c.PeriodicInterval)
	dur("BC_RECONCILE_BACKOFF", &c.BackoffInitial)
	dur("BC_RECONCILE_BACKOFF_MAX", &c.BackoffMax)
	dur("BC_PROVIDER_POLL", &c.ProviderPoll)
	dur("BC_DEPENDENCY_POLL", &c.DependencyPoll)
	dur("BC_CREATE_WINDOW", &c.CreateWindow)
	num("BC_DO_REQUESTS_PER_MINUTE", &c.DigitalOcean.RequestsPerMinute)
	num("BC_DO_BURST", &c.DigitalOcean.Burst)
	dur("BC_DO_REQUEST_TIMEOUT", &c.DigitalOcean.RequestTimeout)
	if len(errs) > 0 {
		return c, fmt.Errorf("reconcile configuration: %v", errs)
	}
	return c.withDefaults()
}

// withDefaults fills the zero fields and checks the periodic interval's bound.
func (c ReconcileConfig) withDefaults() (ReconcileConfig, error) {
	if c.LeaseTTL <= 0 {
		c.LeaseTTL = reconcile.DefaultLeaseTTL
	}
	if c.PeriodicInterval <= 0 {
		c.PeriodicInterval = provresources.DefaultPeriodicInterval
	}
	if c.PeriodicInterval > provresources.MaxPeriodicInterval {
		return c, fmt.Errorf("reconcile configuration: periodic interval %v exceeds %v", c.PeriodicInterval, provresources.MaxPeriodicInterval)
	}
	if c.BackoffInitial <= 0 {
		c.BackoffInitial = time.Second
	}
	if c.BackoffMax <= 0 {
		c.BackoffMax = 5 * time.Minute
	}
	if c.CreateWindow <= 0 {
		c.CreateWindow = provresources.DefaultCreateWindow
	}
	// A create must not outlive half the lease: see provresources.Options.CreateWindow.
	c.CreateWindow = min(c.CreateWindow, c.LeaseTTL/2)
	if c.DigitalOcean.RequestTimeout <= 0 || c.DigitalOcean.RequestTimeout > c.LeaseTTL/2 {
		c.DigitalOcean.RequestTimeout = min(digitalocean.DefaultRequestTimeout, c.LeaseTTL/2)
	}
	return c, nil
}
