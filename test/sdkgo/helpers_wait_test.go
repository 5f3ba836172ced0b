package sdk_test

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"connectrpc.com/connect"

	"better-compute.dev/compute/app"
	"better-compute.dev/compute/app/apptest"
	v1 "better-compute.dev/compute/gen/go/bettercompute/compute/v1"
	"better-compute.dev/compute/provider/digitalocean/sim"
)

// reconcilingStack runs the server with its reconcilers against the DigitalOcean simulator, all
// delays short, so a load balancer turns ready within a second or so.
func reconcilingStack(t *testing.T, opts ...apptest.Option) *apptest.Stack {
	t.Helper()
	simulator := sim.New(sim.Options{
		AcceptAnyToken: true, RequestsPerMinute: 100000, RequestsPerHour: 1000000,
		LoadBalancerActiveDelay: 100 * time.Millisecond, LoadBalancerIPDelay: 150 * time.Millisecond,
		LoadBalancerUpdateDelay: 100 * time.Millisecond, DropletActiveDelay: 100 * time.Millisecond,
	})
	url, err := simulator.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = simulator.Close() })
	short := func(c *app.Config) {
		r := &c.Reconcilers
		r.LeaseTTL, r.PollInterval, r.PeriodicInterval = 5*time.Second, 20*time.Millisecond, time.Second
		r.ProviderPoll, r.DependencyPoll = 100*time.Millisecond, 200*time.Millisecond
		r.BackoffInitial, r.BackoffMax = 50*time.Millisecond, 500*time.Millisecond
		r.DigitalOcean.RequestsPerMinute, r.DigitalOcean.Burst = 30000, 100
		c.WatchPoll = 20 * time.Millisecond
	}
	s := apptest.Start(t, append([]apptest.Option{apptest.WithReconcile(), short}, opts...)...)
	s.SimulatorURL = url
	return s
}

func lbCreate(tn apptest.Tenant, name, key string) *connect.Request[v1.CreateLoadBalancerRequest] {
	pool := true
	return connect.NewRequest(&v1.CreateLoadBalancerRequest{TenantId: tn.ID, PoolId: tn.PoolID, Name: name, Region: "nyc3",
		Targets:        &v1.LoadBalancerTargets{Pool: &pool},
		Forwarding:     []*v1.ForwardingRule{{EntryProtocol: "http", EntryPort: 80, TargetProtocol: "http", TargetPort: 80}},
		IdempotencyKey: key})
}

// faultyTransport sends requests on to the server, except that it can refuse the paths that
// contain refuse (as a refused connection would), and can lose the answers of the next lose
// requests whose path contains losePath (the server did the work; the caller never hears).
type faultyTransport struct {
	refuse   string
	losePath string
	lose     atomic.Int64
	hang     bool // wait for the request's context to end, then fail with its error
	sent     atomic.Int64
	refused  atomic.Int64
}

var errCut = errors.New("connection reset by peer")

func (f *faultyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if f.hang {
		<-r.Context().Done()
		return nil, r.Context().Err()
	}
	if f.refuse != "" && strings.Contains(r.URL.Path, f.refuse) {
		f.refused.Add(1)
		if r.Body != nil {
			r.Body.Close()
		}
		return nil, errors.New("dial tcp: connect: connection refused")
	}
	f.sent.Add(1)
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err == nil && f.losePath != "" && strings.Contains(r.URL.Path, f.losePath) && f.lose.Add(-1) >= 0 {
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return nil, errCut
	}
	return resp, err
}
