package sim_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/digitalocean/godo"
	"golang.org/x/oauth2"

	"better-compute.dev/compute/provider/digitalocean/sim"
)

// testEnv is a started simulator on a manual clock with one account and a godo client for it.
type testEnv struct {
	srv   *sim.Server
	clock *sim.ManualClock
	url   string
	token string
	do    *godo.Client
}

func newEnv(t *testing.T, opts sim.Options) *testEnv {
	t.Helper()
	clock := sim.NewManualClock(time.Unix(1_700_000_000, 0))
	if opts.Now == nil {
		opts.Now = clock.Now
	}
	token := "tok-" + strings.NewReplacer("/", "-", " ", "-").Replace(t.Name())
	opts.Tokens = append(opts.Tokens, token)
	srv := sim.New(opts)
	url, err := srv.Start()
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	return &testEnv{srv: srv, clock: clock, url: url, token: token, do: godoClient(t, url, token)}
}

// godoClient is a plain godo client (no retries), as the provider builds it.
func godoClient(t *testing.T, url, token string) *godo.Client {
	t.Helper()
	hc := oauth2.NewClient(context.Background(), oauth2.StaticTokenSource(&oauth2.Token{AccessToken: token}))
	hc.Timeout = 5 * time.Second
	c, err := godo.New(hc, godo.SetBaseURL(url+"/"))
	if err != nil {
		t.Fatalf("godo: %v", err)
	}
	return c
}

// statusOf returns the HTTP status of a godo error (0 when it is not an API answer).
func statusOf(err error) int {
	var er *godo.ErrorResponse
	if errors.As(err, &er) && er.Response != nil {
		return er.Response.StatusCode
	}
	return 0
}

func messageOf(err error) string {
	var er *godo.ErrorResponse
	if errors.As(err, &er) {
		return er.Message
	}
	return ""
}

// seedDroplet places an active droplet and fails the test on error.
func (e *testEnv) seedDroplet(t *testing.T, seed sim.DropletSeed) godo.Droplet {
	t.Helper()
	d, err := e.srv.CreateDroplet(e.token, seed)
	if err != nil {
		t.Fatalf("seed droplet %s: %v", seed.Name, err)
	}
	return d
}

// regionalRequest is a minimal valid regional load balancer in nyc3's default VPC.
func regionalRequest(name string, droplets ...int) *godo.LoadBalancerRequest {
	return &godo.LoadBalancerRequest{
		Name: name, Region: "nyc3", DropletIDs: droplets,
		ForwardingRules: []godo.ForwardingRule{{EntryProtocol: "http", EntryPort: 80, TargetProtocol: "http", TargetPort: 8080}},
	}
}

func rawRequest(t *testing.T, method, url, token, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	t.Cleanup(func() { _ = resp.Body.Close() })
	return resp
}
