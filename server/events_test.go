package server_test

import (
	"context"
	"testing"
	"time"

	"connectrpc.com/connect"

	"better-compute.dev/compute/app"
	"better-compute.dev/compute/app/apptest"
	v1 "better-compute.dev/compute/gen/go/bettercompute/compute/v1"
	"better-compute.dev/compute/gen/go/bettercompute/compute/v1/computev1connect"
)

// TestWatchResumesFromCursor: the server-streaming watch sends what is after the cursor, then new
// events as they commit; a watcher that reconnects with its last cursor misses nothing and sees
// nothing twice. Another tenant's watch sees none of it.
func TestWatchResumesFromCursor(t *testing.T) {
	s := apptest.Start(t, func(c *app.Config) { c.WatchPoll = 20 * time.Millisecond })
	tn := s.NewTenant(t, "acme", "editor")
	other := s.NewTenant(t, "globex", "editor")
	lbs := computev1connect.NewLoadBalancerServiceClient(h2c(), s.App.URL, connect.WithGRPC(), bearer(tn.Token))
	create := func(key string) string {
		r, err := lbs.CreateLoadBalancer(t.Context(), connect.NewRequest(createRequest(tn, key)))
		if err != nil {
			t.Fatal(err)
		}
		return r.Msg.GetLoadBalancer().GetId()
	}
	ids := []string{create("w1"), create("w2")}

	watch := func(token, tenant string, after int64, n int) []*v1.Event {
		t.Helper()
		c := computev1connect.NewEventServiceClient(h2c(), s.App.URL, connect.WithGRPC(), bearer(token))
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		stream, err := c.WatchEvents(ctx, connect.NewRequest(&v1.WatchEventsRequest{TenantId: tenant, After: after}))
		if err != nil {
			t.Fatal(err)
		}
		defer stream.Close()
		var got []*v1.Event
		for len(got) < n && stream.Receive() {
			got = append(got, stream.Msg().GetEvent())
		}
		if len(got) < n {
			t.Logf("stream ended: %v", stream.Err())
		}
		return got
	}
	first := watch(tn.Token, tn.ID, 0, 2)
	if len(first) != 2 || first[0].GetResourceId() != ids[0] || first[1].GetResourceId() != ids[1] || first[0].GetCursor() >= first[1].GetCursor() {
		t.Fatalf("first watch: %v", first)
	}
	// Events committed while nobody watched, then a resume from the last cursor seen.
	ids = append(ids, create("w3"))
	done := make(chan []*v1.Event)
	go func() { done <- watch(tn.Token, tn.ID, first[1].GetCursor(), 2) }()
	time.Sleep(100 * time.Millisecond)
	ids = append(ids, create("w4")) // arrives while the stream is open
	resumed := <-done
	if len(resumed) != 2 || resumed[0].GetResourceId() != ids[2] || resumed[1].GetResourceId() != ids[3] {
		t.Fatalf("resumed watch: %v", resumed)
	}
	if resumed[0].GetType() != "providerLoadBalancer.created" {
		t.Fatalf("type %s", resumed[0].GetType())
	}
	// The other tenant's principal cannot watch this tenant, and its own stream is empty.
	c := computev1connect.NewEventServiceClient(h2c(), s.App.URL, connect.WithGRPC(), bearer(other.Token))
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	stream, err := c.WatchEvents(ctx, connect.NewRequest(&v1.WatchEventsRequest{TenantId: tn.ID}))
	if err == nil {
		if stream.Receive() {
			t.Fatal("another tenant received an event")
		}
		err = stream.Err()
	}
	if connect.CodeOf(err) != connect.CodePermissionDenied {
		t.Fatalf("cross-tenant watch: %v", err)
	}
	evs, _, err := s.App.Events.ListEvents(other.Ctx, &v1.ListEventsRequest{TenantId: other.ID})
	if err != nil || len(evs) != 0 {
		t.Fatalf("other tenant's own events: %v %v", evs, err)
	}
}
