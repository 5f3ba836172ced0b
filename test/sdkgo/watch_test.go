package sdk_test

import (
	"context"
	"fmt"
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
	sdk "better-compute.dev/compute/sdk/go"
)

// TestWatcherResumes: a watcher whose streams keep dying (here: given up as silent every 300 ms)
// reopens each from its cursor; every event arrives once, in order, and Cursor is the last one.
func TestWatcherResumes(t *testing.T) {
	s := apptest.Start(t, func(c *app.Config) { c.WatchPoll = 20 * time.Millisecond })
	tn := s.NewTenant(t, "resume", "editor")
	c := sdk.New(s.App.URL, tn.Token)
	w := sdk.NewWatcher(c.Events, &v1.WatchEventsRequest{TenantId: tn.ID, Types: []string{"providerLoadBalancer.created"}})
	w.IdleTimeout = 300 * time.Millisecond
	w.InitialBackoff = 10 * time.Millisecond

	const n = 4
	made := make(chan string, n)
	go func() {
		for i := range n {
			resp, err := c.LoadBalancers.CreateLoadBalancer(context.Background(), lbCreate(tn, fmt.Sprintf("resume-%d", i), fmt.Sprintf("resume-%d", i)))
			if err != nil {
				t.Error(err)
				return
			}
			made <- resp.Msg.GetLoadBalancer().GetId()
			time.Sleep(500 * time.Millisecond) // streams die between creates
		}
	}()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	var got []*v1.Event
	for ev, err := range w.Events(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, ev)
		if len(got) == n {
			break
		}
	}
	if len(got) != n {
		t.Fatalf("%d events", len(got))
	}
	for i, ev := range got {
		if id := <-made; ev.GetResourceId() != id || (i > 0 && ev.GetCursor() <= got[i-1].GetCursor()) {
			t.Fatalf("event %d: %v (made %s)", i, ev, id)
		}
	}
	if w.Cursor() != got[n-1].GetCursor() || w.Reconnects.Load() < 2 {
		t.Fatalf("cursor %d (last %d), %d reconnects", w.Cursor(), got[n-1].GetCursor(), w.Reconnects.Load())
	}
}

// TestWatcherHeartbeats: heartbeats keep an idle stream open (no reconnect though the watcher
// gives up on 1 s of silence, ten heartbeats, so a loaded machine's pauses do not count), are never yielded, and move the cursor past the events the
// filters leave out; a watch that may not read ends with that error.
func TestWatcherHeartbeats(t *testing.T) {
	s := apptest.Start(t, func(c *app.Config) {
		c.WatchPoll = 20 * time.Millisecond
		c.WatchHeartbeat = 100 * time.Millisecond
	})
	tn := s.NewTenant(t, "beats", "editor")
	c := sdk.New(s.App.URL, tn.Token)
	if _, err := c.LoadBalancers.CreateLoadBalancer(t.Context(), lbCreate(tn, "beat", "beat-1")); err != nil {
		t.Fatal(err)
	}
	head, err := c.Events.ListEvents(t.Context(), connect.NewRequest(&v1.ListEventsRequest{TenantId: tn.ID}))
	if err != nil || head.Msg.GetNextCursor() == 0 {
		t.Fatal(head, err)
	}
	// A raw stream sees the heartbeats the watcher hides.
	stream, err := c.Events.WatchEvents(t.Context(), connect.NewRequest(&v1.WatchEventsRequest{TenantId: tn.ID, Types: []string{"none.such"}}))
	if err != nil || !stream.Receive() || stream.Msg().GetHeartbeat() == nil || stream.Msg().GetEvent() != nil {
		t.Fatalf("raw stream: %v %v", stream.Msg(), err)
	}
	stream.Close()

	w := sdk.NewWatcher(c.Events, &v1.WatchEventsRequest{TenantId: tn.ID, Types: []string{"none.such"}})
	w.IdleTimeout = time.Second
	ctx, cancel := context.WithTimeout(t.Context(), 2500*time.Millisecond)
	defer cancel()
	for ev, err := range w.Events(ctx) {
		t.Fatalf("yielded %v %v", ev, err)
	}
	if w.Reconnects.Load() != 0 || w.Cursor() != head.Msg.GetNextCursor() {
		t.Fatalf("%d reconnects, cursor %d, want %d", w.Reconnects.Load(), w.Cursor(), head.Msg.GetNextCursor())
	}

	// Another tenant's events: PERMISSION_DENIED, yielded once, not retried.
	other := s.NewTenant(t, "beats-other", "editor")
	w = sdk.NewWatcher(sdk.New(s.App.URL, other.Token, sdk.WithHTTPClient(http.DefaultClient)).Events, &v1.WatchEventsRequest{TenantId: tn.ID})
	var errs []error
	for _, err := range w.Events(t.Context()) {
		errs = append(errs, err)
	}
	if len(errs) != 1 || w.Reconnects.Load() != 0 {
		t.Fatalf("denied: %v, %d reconnects", errs, w.Reconnects.Load())
	}
	if pe, ok := sdk.AsError(errs[0]); !ok || pe.Code != sdk.AccessDenied {
		t.Fatalf("denied: %v", errs[0])
	}
}

// cutBody fails the reads of a body once 400 bytes came (an event or two), as a connection a
// proxy cuts mid-stream.
type cutBody struct {
	body io.ReadCloser
	left int
}

func (c *cutBody) Read(p []byte) (int, error) {
	if c.left <= 0 {
		return 0, errCut
	}
	n, err := c.body.Read(p[:min(len(p), c.left)])
	c.left -= n
	return n, err
}

func (c *cutBody) Close() error { return c.body.Close() }

type cuttingTransport struct{ streams atomic.Int64 }

func (c *cuttingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err == nil && strings.HasSuffix(r.URL.Path, "/WatchEvents") {
		c.streams.Add(1)
		resp.Body = &cutBody{body: resp.Body, left: 400}
	}
	return resp, err
}

// TestWatcherSurvivesCuts: every stream's connection is cut after 400 bytes; the watcher
// reconnects from its cursor each time and still delivers every event once.
func TestWatcherSurvivesCuts(t *testing.T) {
	s := apptest.Start(t, func(c *app.Config) { c.WatchPoll = 20 * time.Millisecond })
	tn := s.NewTenant(t, "cuts", "editor")
	c := sdk.New(s.App.URL, tn.Token)
	var want []string
	for i := range 4 {
		resp, err := c.LoadBalancers.CreateLoadBalancer(t.Context(), lbCreate(tn, fmt.Sprintf("cut-%d", i), fmt.Sprintf("cut-%d", i)))
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, resp.Msg.GetLoadBalancer().GetId())
	}
	ct := &cuttingTransport{}
	cut := sdk.New(s.App.URL, tn.Token, sdk.WithHTTPClient(&http.Client{Transport: ct}))
	w := sdk.NewWatcher(cut.Events, &v1.WatchEventsRequest{TenantId: tn.ID})
	w.InitialBackoff = 5 * time.Millisecond
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	var got []string
	for ev, err := range w.Events(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		if got = append(got, ev.GetResourceId()); len(got) == len(want) {
			break
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) || ct.streams.Load() < 2 {
		t.Fatalf("got %v, want %v (%d streams)", got, want, ct.streams.Load())
	}
}
