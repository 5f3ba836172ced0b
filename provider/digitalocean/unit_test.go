package digitalocean

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/digitalocean/godo"
	"github.com/google/go-cmp/cmp"

	"better-compute.dev/compute/provider"
)

// TestFirewallEntries: sources become DigitalOcean's "ip:"/"cidr:" entries and back.
func TestFirewallEntries(t *testing.T) {
	t.Parallel()
	cases := []struct {
		reason, in, want string
		bad              bool
	}{
		{reason: "an address", in: "1.2.3.4", want: "ip:1.2.3.4"},
		{reason: "a network", in: "10.0.0.0/8", want: "cidr:10.0.0.0/8"},
		{reason: "an IPv6 address", in: "2001:db8::1", want: "ip:2001:db8::1"},
		{reason: "already in provider form", in: "cidr:192.168.0.0/16", want: "cidr:192.168.0.0/16"},
		{reason: "garbage", in: "example.com", bad: true},
		{reason: "bad prefix length", in: "10.0.0.0/40", bad: true},
	}
	for _, c := range cases {
		got, err := firewallEntry(c.in)
		if (err != nil) != c.bad || got != c.want {
			t.Errorf("%s: %q -> %q, %v", c.reason, c.in, got, err)
		}
		if !c.bad {
			if back := sources([]string{got}); back[0] != stripped(c.in) {
				t.Errorf("%s: back to %q", c.reason, back[0])
			}
		}
	}
}

func stripped(s string) string {
	return sources([]string{s})[0]
}

// TestLoadBalancerRequest checks the request built from a spec: droplet ids, sticky sessions
// defaulting to none (a PUT must reset them), global settings.
func TestLoadBalancerRequest(t *testing.T) {
	t.Parallel()
	regional, err := lbRequest(provider.LoadBalancerSpec{Name: "r", Region: "nyc3", NetworkID: "vpc", MachineIDs: []string{"7", "9"},
		Forwarding: []provider.ForwardingRule{{EntryProtocol: "HTTP", EntryPort: 80, TargetProtocol: "HTTP", TargetPort: 80}}})
	if err != nil {
		t.Fatal(err)
	}
	want := &godo.LoadBalancerRequest{Name: "r", Type: "REGIONAL", Region: "nyc3", VPCUUID: "vpc", DropletIDs: []int{7, 9},
		ForwardingRules: []godo.ForwardingRule{{EntryProtocol: "http", EntryPort: 80, TargetProtocol: "http", TargetPort: 80}},
		StickySessions:  &godo.StickySessions{Type: "none"}}
	if diff := cmp.Diff(want, regional); diff != "" {
		t.Errorf("regional request (-want +got):\n%s", diff)
	}
	global, err := lbRequest(provider.LoadBalancerSpec{Name: "g", Scope: provider.ScopeGlobal, TargetLoadBalancerIDs: []string{"a"},
		Forwarding: []provider.ForwardingRule{{EntryProtocol: "https", EntryPort: 443, TargetProtocol: "https", TargetPort: 8443, CertificateID: "c"}},
		Domains:    []provider.Domain{{Name: "x.example.com", CertificateID: "c"}}})
	if err != nil {
		t.Fatal(err)
	}
	if global.Type != "GLOBAL" || global.GLBSettings.TargetProtocol != "https" || global.GLBSettings.TargetPort != 8443 ||
		global.Region != "" || len(global.Domains) != 1 || global.Domains[0].CertificateID != "c" {
		t.Errorf("global request %+v", global)
	}
}

// TestFindPagedWalksPages: against a list that ignores the filter, the search follows the
// pages until the match or the last page, and no further.
func TestFindPagedWalksPages(t *testing.T) {
	t.Parallel()
	pages := [][]string{{"a", "b"}, {"c", "d"}, {"e"}}
	cases := []struct {
		reason    string
		name      string
		wantFound bool
		wantCalls int
	}{
		{"on the first page", "b", true, 1},
		{"on the last page", "e", true, 3},
		{"absent", "z", false, 3},
	}
	for _, c := range cases {
		calls := 0
		list := func(_ context.Context, opt *godo.ListOptions) ([]string, *godo.Response, error) {
			calls++
			resp := &godo.Response{Links: &godo.Links{}}
			if opt.Page < len(pages) {
				resp.Links.Pages = &godo.Pages{Next: "http://x/?page=" + strconv.Itoa(opt.Page+1)}
			}
			return pages[opt.Page-1], resp, nil
		}
		got, found, err := findPaged(context.Background(), 2, list, func(s string) bool { return s == c.name })
		if err != nil || found != c.wantFound || (found && got != c.name) || calls != c.wantCalls {
			t.Errorf("%s: %q %v %v after %d calls", c.reason, got, found, err, calls)
		}
	}
}

// TestLimiterStaysUnderBudget: the default bucket cannot pass more than DigitalOcean's 250 in
// a minute, and a spent bucket refuses at once when waiting is not allowed.
func TestLimiterStaysUnderBudget(t *testing.T) {
	t.Parallel()
	l := newTokenLimiter(DefaultRequestsPerMinute, DefaultBurst)
	perMinute := float64(l.bucket.Burst()) + 60*float64(l.bucket.Limit())
	if perMinute > 250 || perMinute < 200 {
		t.Errorf("default bucket passes %.1f a minute, want at most 250 and not far below", perMinute)
	}
	tight := newTokenLimiter(11, 10) // refills one request a minute
	for i := range 10 {
		if err := tight.wait(context.Background(), -1); err != nil {
			t.Fatalf("request %d within the burst: %v", i, err)
		}
	}
	var rl *provider.RateLimitedError
	if err := tight.wait(context.Background(), -1); !errors.As(err, &rl) || rl.RetryAfter.Before(time.Now()) {
		t.Errorf("spent bucket: %v, want a RateLimitedError in the future", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := tight.wait(ctx, time.Hour); !errors.As(err, &rl) {
		t.Errorf("wait past the deadline: %v, want a RateLimitedError", err)
	}
}

// TestRetryAfterParsing covers the headers a 429 may carry.
func TestRetryAfterParsing(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_700_000_000, 0)
	cases := []struct {
		reason string
		header http.Header
		want   time.Time
	}{
		{"seconds", http.Header{"Retry-After": {"7"}}, now.Add(7 * time.Second)},
		{"http date", http.Header{"Retry-After": {now.Add(time.Minute).UTC().Format(http.TimeFormat)}}, now.Add(time.Minute)},
		{"reset only", http.Header{"Ratelimit-Reset": {strconv.FormatInt(now.Add(90*time.Second).Unix(), 10)}}, now.Add(90 * time.Second)},
		{"reset in the past", http.Header{"Ratelimit-Reset": {"1"}}, now.Add(time.Minute)},
		{"nothing", http.Header{}, now.Add(time.Minute)},
	}
	for _, c := range cases {
		if got := retryAfter(c.header, now); !got.Equal(c.want) {
			t.Errorf("%s: %s, want %s", c.reason, got, c.want)
		}
	}
}

// memBudget is a SharedBudget in memory with the statement's semantics (a bucket refilled from
// a clock, grants up to want leaving reserve), counting what it granted.
type memBudget struct {
	mu      sync.Mutex
	tokens  map[string]float64
	at      map[string]time.Time
	granted map[string]int
}

func newMemBudget() *memBudget {
	return &memBudget{tokens: map[string]float64{}, at: map[string]time.Time{}, granted: map[string]int{}}
}

func (m *memBudget) Take(_ context.Context, key string, capacity, perSecond float64, want int, reserve float64) (int, float64, time.Time, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := time.Now()
	tok, seen := m.tokens[key]
	if !seen {
		tok = capacity
	} else {
		tok = min(capacity, tok+perSecond*now.Sub(m.at[key]).Seconds())
	}
	g := min(want, max(int(tok-reserve), 0))
	m.tokens[key], m.at[key] = tok-float64(g), now
	m.granted[key] += g
	return g, tok - float64(g), time.Time{}, nil
}

func (m *memBudget) Block(context.Context, string, time.Time) error { return nil }

// TestSharedBucketLeasesInOrder: requests waiting in one process are served by one lease at a
// time, every leased request is used (the budget granted exactly what was sent), and a poll is
// deferred while creates wait unless the polls' credit pays for it.
func TestSharedBucketLeasesInOrder(t *testing.T) {
	t.Parallel()
	budget := newMemBudget()
	l := newTokenLimiter(3000, 10)
	l.shared = newSharedBucket(budget, "k", 3000, 10)
	const n = 60
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- l.wait(context.Background(), 10*time.Second)
		}()
	}
	// While the creates wait, the first poll is paid by the credit, the next is deferred.
	for !l.shared.busy() {
		time.Sleep(time.Millisecond)
	}
	polled := make(chan error, 1)
	go func() { polled <- l.wait(provider.WithLowPriority(context.Background()), 10*time.Second) }()
	time.Sleep(5 * time.Millisecond)
	if err := l.wait(provider.WithLowPriority(context.Background()), 10*time.Second); !errors.Is(err, provider.ErrDeferred) {
		t.Errorf("a second poll while creates wait: %v, want it deferred (the credit is spent)", err)
	}
	if err := <-polled; err != nil {
		t.Errorf("the first poll while creates wait: %v, want it paid by the credit", err)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("a waiting request failed: %v", err)
		}
	}
	wg.Wait()
	budget.mu.Lock()
	defer budget.mu.Unlock()
	if got := budget.granted["k"]; got != n+1 {
		t.Errorf("the budget granted %d requests for %d sent: leased requests lapsed", got, n+1)
	}
}

// TestLimitersKeyedByTokenAndBudget: providers of one token share a limiter only when their
// budget is kept in the same place. A process that opened two databases (tests do) must not
// give the second's providers a limiter drawing on the first, which may be closed by then: the
// -count=2 runs of the reconciler tests failed with "take provider budget: closed pool".
func TestLimitersKeyedByTokenAndBudget(t *testing.T) {
	l := NewLimiters()
	first, second := newMemBudget(), newMemBudget()
	a := l.forToken("tok", 60, 5, first)
	cases := []struct {
		name   string
		token  string
		budget SharedBudget
		shared bool
	}{
		{"same token, same budget", "tok", first, true},
		{"same token, another budget", "tok", second, false},
		{"same token, per process", "tok", nil, false},
		{"another token, same budget", "other", first, false},
	}
	for _, c := range cases {
		got := l.forToken(c.token, 60, 5, c.budget)
		if (got == a) != c.shared {
			t.Errorf("%s: shares the first limiter %v, want %v", c.name, got == a, c.shared)
		}
		if c.budget != nil && (got.shared == nil || got.shared.budget != c.budget) {
			t.Errorf("%s: the limiter draws on another budget", c.name)
		}
	}
	if b := l.forToken("tok", 60, 5, second); b != l.forToken("tok", 60, 5, second) {
		t.Error("two providers of one token and budget got two limiters")
	}
}
