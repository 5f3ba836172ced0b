package sim

import (
	"sync"
	"time"
)

// Defaults the simulator uses when an Options field is left zero. The rate limits are the ones
// DigitalOcean publishes per token; the delays are short enough for a person watching a dev
// server and long enough that a caller which does not poll is caught.
const (
	DefaultRequestsPerMinute       = 250
	DefaultRequestsPerHour         = 5000
	DefaultLoadBalancerActiveDelay = 2 * time.Second
	DefaultLoadBalancerIPDelay     = 3 * time.Second
	DefaultLoadBalancerUpdateDelay = 1 * time.Second
	DefaultDropletActiveDelay      = 2 * time.Second
	DefaultCertificateVerifyDelay  = 2 * time.Second
)

// Options configures a Server. Zero fields take the defaults above; a negative delay means the
// transition happens at once, and a negative rate limit means that window is not enforced.
type Options struct {
	// Tokens are the bearer tokens accepted from the start; each one is its own account.
	Tokens []string
	// AcceptAnyToken makes every non-empty bearer token an account on first use (handy for a
	// dev server driven by another process); unknown tokens are refused with 401 otherwise.
	AcceptAnyToken bool

	// RequestsPerMinute and RequestsPerHour are the rolling per-token budgets.
	RequestsPerMinute int
	RequestsPerHour   int

	// LoadBalancerActiveDelay is how long a new load balancer stays "new".
	LoadBalancerActiveDelay time.Duration
	// LoadBalancerIPDelay is how long after creation the ip and ipv6 appear.
	LoadBalancerIPDelay time.Duration
	// LoadBalancerUpdateDelay is how long a load balancer processes an update (PUT or a
	// droplet change); another update in that time is refused with 403.
	LoadBalancerUpdateDelay time.Duration
	// DropletActiveDelay is how long a created droplet stays "new".
	DropletActiveDelay time.Duration
	// CertificateVerifyDelay is how long a lets_encrypt certificate stays "pending".
	CertificateVerifyDelay time.Duration

	// KubeAPIServer, when set, is a real Kubernetes API server that stands in for every
	// cluster: a cluster's endpoint and kubeconfig are its (the real-API-server test tier).
	// Nil: each cluster gets an endpoint of its own that nothing answers.
	KubeAPIServer *KubeAPIServer

	// Now is the clock; nil means time.Now. Asynchronous transitions and rate windows are
	// computed from it lazily, so a test can move time with a ManualClock instead of sleeping.
	Now func() time.Time
}

// KubeAPIServer is where a cluster's kubeconfig points and the credential it carries: a
// client certificate, or a bearer token when Token is set.
type KubeAPIServer struct {
	Server        string // https://host:port
	CAPEM         []byte // the server certificate's CA
	ClientCertPEM []byte
	ClientKeyPEM  []byte
	Token         string
}

// withDefaults fills zero fields; negative delays collapse to zero.
func (o Options) withDefaults() Options {
	if o.RequestsPerMinute == 0 {
		o.RequestsPerMinute = DefaultRequestsPerMinute
	}
	if o.RequestsPerHour == 0 {
		o.RequestsPerHour = DefaultRequestsPerHour
	}
	o.LoadBalancerActiveDelay = delayOr(o.LoadBalancerActiveDelay, DefaultLoadBalancerActiveDelay)
	o.LoadBalancerIPDelay = delayOr(o.LoadBalancerIPDelay, DefaultLoadBalancerIPDelay)
	o.LoadBalancerUpdateDelay = delayOr(o.LoadBalancerUpdateDelay, DefaultLoadBalancerUpdateDelay)
	o.DropletActiveDelay = delayOr(o.DropletActiveDelay, DefaultDropletActiveDelay)
	o.CertificateVerifyDelay = delayOr(o.CertificateVerifyDelay, DefaultCertificateVerifyDelay)
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

func delayOr(d, def time.Duration) time.Duration {
	switch {
	case d == 0:
		return def
	case d < 0:
		return 0
	default:
		return d
	}
}

// ManualClock is a clock a test moves by hand; pass its Now method as Options.Now.
type ManualClock struct {
	mu  sync.Mutex
	now time.Time
}

// NewManualClock returns a clock standing at start.
func NewManualClock(start time.Time) *ManualClock {
	return &ManualClock{now: start}
}

// Now reports the clock's current time.
func (c *ManualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d.
func (c *ManualClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}
