package server_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	"better-compute.dev/compute/app"
	"better-compute.dev/compute/app/apptest"
	v1 "better-compute.dev/compute/gen/go/bettercompute/compute/v1"
	"better-compute.dev/compute/gen/go/bettercompute/compute/v1/computev1connect"
)

// TestWatchFiltersAndHeartbeat: a watch (and a list) keeps only the events about its resourceId
// and of its types; an idle watch gets heartbeats carrying how far it has read, filtered-out
// events included; bad filters are INVALID_INPUT.
func TestWatchFiltersAndHeartbeat(t *testing.T) {
	s := apptest.Start(t, func(c *app.Config) {
		c.WatchPoll = 20 * time.Millisecond
		c.WatchHeartbeat = 150 * time.Millisecond
	})
	tn := s.NewTenant(t, "filters", "editor")
	lbs := computev1connect.NewLoadBalancerServiceClient(h2c(), s.App.URL, connect.WithGRPC(), bearer(tn.Token))
	evc := computev1connect.NewEventServiceClient(h2c(), s.App.URL, connect.WithGRPC(), bearer(tn.Token))
	var made []string
	for _, k := range []string{"fa", "fb", "fc"} {
		r, err := lbs.CreateLoadBalancer(t.Context(), connect.NewRequest(createRequest(tn, k)))
		if err != nil {
			t.Fatal(err)
		}
		made = append(made, r.Msg.GetLoadBalancer().GetId())
	}
	yes := true
	if _, err := lbs.UpdateLoadBalancer(t.Context(), connect.NewRequest(&v1.UpdateLoadBalancerRequest{TenantId: tn.ID, LoadBalancerId: made[0], RedirectHttpToHttps: &yes})); err != nil {
		t.Fatal(err)
	}
	all, err := evc.ListEvents(t.Context(), connect.NewRequest(&v1.ListEventsRequest{TenantId: tn.ID}))
	if err != nil {
		t.Fatal(err)
	}
	head := all.Msg.GetNextCursor()

	// watch reads messages until it has n events or a heartbeat after them; it returns both.
	watch := func(req *v1.WatchEventsRequest, n int) ([]*v1.Event, *v1.WatchHeartbeat) {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		stream, err := evc.WatchEvents(ctx, connect.NewRequest(req))
		if err != nil {
			t.Fatal(err)
		}
		defer stream.Close()
		var got []*v1.Event
		for stream.Receive() {
			m := stream.Msg()
			if hb := m.GetHeartbeat(); hb != nil {
				if m.GetEvent() != nil {
					t.Fatalf("a heartbeat with an event: %v", m)
				}
				if len(got) >= n {
					return got, hb
				}
				continue
			}
			got = append(got, m.GetEvent())
		}
		t.Fatalf("stream ended after %d events: %v", len(got), stream.Err())
		return nil, nil
	}
	types := func(evs []*v1.Event) string {
		var out []string
		for _, e := range evs {
			out = append(out, e.GetResourceId()+" "+e.GetType())
		}
		return fmt.Sprint(out)
	}

	// By resource: only the first load balancer's created and updated, then a heartbeat at the head.
	got, hb := watch(&v1.WatchEventsRequest{TenantId: tn.ID, ResourceId: made[0]}, 2)
	want := fmt.Sprint([]string{made[0] + " providerLoadBalancer.created", made[0] + " providerLoadBalancer.updated"})
	if types(got) != want {
		t.Fatalf("by resource: %s, want %s", types(got), want)
	}
	if hb.GetCursor() != head || hb.GetTime() == nil {
		t.Fatalf("heartbeat %v, want cursor %d", hb, head)
	}
	// By type: the created events of all three.
	got, _ = watch(&v1.WatchEventsRequest{TenantId: tn.ID, Types: []string{"providerLoadBalancer.created"}}, 3)
	if len(got) != 3 || got[0].GetResourceId() != made[0] || got[2].GetResourceId() != made[2] {
		t.Fatalf("by type: %s", types(got))
	}
	for _, e := range got {
		if e.GetType() != "providerLoadBalancer.created" {
			t.Fatalf("by type: %s", types(got))
		}
	}
	// Both, matching nothing: heartbeats only, each at the head, the stream kept open.
	start := time.Now()
	got, hb = watch(&v1.WatchEventsRequest{TenantId: tn.ID, ResourceId: made[1], Types: []string{"providerLoadBalancer.updated"}}, 0)
	if len(got) != 0 || hb.GetCursor() != head {
		t.Fatalf("nothing matches: %s, heartbeat %v (head %d)", types(got), hb, head)
	}
	if d := time.Since(start); d < 100*time.Millisecond {
		t.Fatalf("first heartbeat after %s: sooner than the 150ms configured", d)
	}

	// The list shares the types filter.
	l, err := evc.ListEvents(t.Context(), connect.NewRequest(&v1.ListEventsRequest{TenantId: tn.ID, Types: []string{"providerLoadBalancer.updated"}}))
	if err != nil || len(l.Msg.GetEvents()) != 1 || l.Msg.GetEvents()[0].GetResourceId() != made[0] {
		t.Fatalf("list by type: %v %v", l, err)
	}

	// Bad filters are refused before the stream opens.
	for name, req := range map[string]*v1.WatchEventsRequest{
		"pattern":  {TenantId: tn.ID, Types: []string{"no spaces"}},
		"too many": {TenantId: tn.ID, Types: strings.Split(strings.Repeat("x,", 32)+"x", ",")},
		"resource": {TenantId: tn.ID, ResourceId: string(make([]byte, 65))},
	} {
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		stream, err := evc.WatchEvents(ctx, connect.NewRequest(req))
		if err == nil {
			stream.Receive()
			err = stream.Err()
		}
		cancel()
		if connect.CodeOf(err) != connect.CodeInvalidArgument {
			t.Fatalf("%s: %v", name, err)
		}
	}
}
