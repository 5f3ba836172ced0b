package watchhub_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"better-compute.dev/compute/apierr"
	"better-compute.dev/compute/core/events/watchhub"
	v1 "better-compute.dev/compute/gen/go/bettercompute/compute/v1"
	"better-compute.dev/compute/gen/go/bettercompute/compute/v1/errcode"
	"better-compute.dev/compute/store"
	"better-compute.dev/compute/store/storetest"
	"better-compute.dev/compute/testwait"
)

// statements counts the statements a pool runs (a batch's count once per statement).
type statements struct {
	store.NoTracer
	n atomic.Int64
}

func (c *statements) StatementStart(ctx context.Context, _ string, _ []any) context.Context {
	c.n.Add(1)
	return ctx
}
func (c *statements) BatchStart(ctx context.Context, sqls []string) context.Context {
	c.n.Add(int64(len(sqls)))
	return ctx
}

func convert(e store.Event) (*v1.Event, error) {
	return &v1.Event{Cursor: e.Seq, TenantId: e.TenantID, Type: e.Type, ResourceId: e.ResourceID}, nil
}

type env struct {
	db    *store.DB
	stmts *statements
	hub   *watchhub.Hub
	n     int
}

func newEnv(t *testing.T, buffer int) *env {
	t.Helper()
	schema := storetest.NewSchema(t)
	c := &statements{}
	db, err := store.Open(store.WithTracer(context.Background(), c), schema.URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	return &env{db: db, stmts: c, hub: watchhub.New(watchhub.Options{Read: func(ctx context.Context, rs []store.EventRange, limit int) (store.EventFeed, error) {
		return store.ReadEventRanges(ctx, db, rs, limit)
	}, Poll: 20 * time.Millisecond, Buffer: buffer, Convert: convert})}
}

// append writes events to a tenant's inbox, committed together.
func (e *env) append(t *testing.T, tenant string, types ...string) {
	t.Helper()
	err := store.ExecuteTx(context.Background(), e.db, func(tx store.Tx) error {
		for _, typ := range types {
			e.n++
			if _, err := store.AppendEvent(context.Background(), tx, store.Event{TenantID: tenant, ID: fmt.Sprintf("ev-%d", e.n), Type: typ, ResourceID: "r-" + typ}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// drain collects what a watch receives until it holds want events (or ends).
func drain(t *testing.T, s *watchhub.Sub, want int) ([]*v1.Event, error) {
	t.Helper()
	var got []*v1.Event
	var end error
	testwait.Until(t, 10*time.Second, "events", func() (bool, string) {
		evs, err := s.Take()
		got = append(got, evs...)
		end = err
		return len(got) >= want || err != nil, fmt.Sprintf("%d of %d", len(got), want)
	})
	return got, end
}

func cursors(evs []*v1.Event) []int64 {
	var out []int64
	for _, e := range evs {
		out = append(out, e.GetCursor())
	}
	return out
}

// TestOneReadServesEveryWatch: watches of several tenants, with and without filters, each get
// exactly their tenant's events that their filter keeps, in cursor order; a watch that resumes
// from an old cursor catches up and then follows like the others; a heartbeat's cursor counts
// the events a filter left out; and every read of the hub is one batch of two statements,
// whatever the number of watches.
func TestOneReadServesEveryWatch(t *testing.T) {
	e := newEnv(t, 0)
	e.append(t, "tn-a", "x", "y", "x")
	e.append(t, "tn-b", "y")
	var subs []*watchhub.Sub
	for i := range 50 {
		tenant := []string{"tn-a", "tn-b"}[i%2]
		subs = append(subs, e.hub.Subscribe(tenant, 0, watchhub.Filter{}))
	}
	onlyX := e.hub.Subscribe("tn-a", 0, watchhub.Filter{Types: []string{"x"}})
	byResource := e.hub.Subscribe("tn-a", 0, watchhub.Filter{ResourceID: "r-y"})
	defer func() {
		for _, s := range append(subs, onlyX, byResource) {
			s.Close()
		}
	}()
	for i, s := range subs {
		want := []int64{1, 2, 3}
		if i%2 == 1 {
			want = []int64{1}
		}
		got, err := drain(t, s, len(want))
		if err != nil || fmt.Sprint(cursors(got)) != fmt.Sprint(want) {
			t.Fatalf("watch %d: %v %v, want %v", i, cursors(got), err, want)
		}
		for _, ev := range got {
			if ev.GetTenantId() != []string{"tn-a", "tn-b"}[i%2] {
				t.Fatalf("watch %d got another tenant's event %v", i, ev)
			}
		}
	}
	if got, _ := drain(t, onlyX, 2); fmt.Sprint(cursors(got)) != "[1 3]" {
		t.Fatalf("types filter: %v", cursors(got))
	}
	if got, _ := drain(t, byResource, 1); fmt.Sprint(cursors(got)) != "[2]" {
		t.Fatalf("resource filter: %v", cursors(got))
	}
	testwait.Until(t, 10*time.Second, "heartbeat cursor", func() (bool, string) {
		c, ok := byResource.Quiet()
		return ok && c == 3, fmt.Sprintf("cursor %d, quiet %v", c, ok)
	})

	// New events while all are open, then a watch resuming from cursor 1 (behind the feed).
	e.append(t, "tn-a", "x", "x")
	late := e.hub.Subscribe("tn-a", 1, watchhub.Filter{})
	defer late.Close()
	if got, _ := drain(t, late, 4); fmt.Sprint(cursors(got)) != "[2 3 4 5]" {
		t.Fatalf("resumed watch: %v", cursors(got))
	}
	if got, _ := drain(t, subs[0], 2); fmt.Sprint(cursors(got)) != "[4 5]" {
		t.Fatalf("following watch: %v", cursors(got))
	}
	e.append(t, "tn-a", "y")
	for _, s := range []*watchhub.Sub{late, subs[0]} {
		if got, _ := drain(t, s, 1); fmt.Sprint(cursors(got)) != "[6]" {
			t.Fatalf("after catching up: %v", cursors(got))
		}
	}

	// Idle: each read is one batch of two statements (the numbering and the read).
	reads := func() int64 { return e.hub.Reads() }
	r0, s0 := reads(), e.stmts.n.Load()
	testwait.Until(t, 10*time.Second, "idle reads", func() (bool, string) {
		return reads()-r0 >= 10, fmt.Sprintf("%d reads", reads()-r0)
	})
	r1, s1 := reads(), e.stmts.n.Load()
	// A read under way at either end may count its statements on one side only.
	if got := s1 - s0; got < 2*(r1-r0)-2 || got > 2*(r1-r0)+2 {
		t.Fatalf("%d statements for %d reads with %d watches open, want 2 per read", got, r1-r0, e.hub.Open())
	}
}

// TestSlowWatchEndsAloneAndResumes: a watch whose client takes nothing is ended, once its buffer
// overflows, with UNAVAILABLE after the events it holds; a watch of the same tenant that takes
// its events gets every one, and the slow one resumed from its last cursor misses nothing. A
// watch replaying more history than its buffer holds is paced, not ended.
func TestSlowWatchEndsAloneAndResumes(t *testing.T) {
	e := newEnv(t, 4)
	slow := e.hub.Subscribe("tn-s", 0, watchhub.Filter{})
	defer slow.Close()
	fast := e.hub.Subscribe("tn-s", 0, watchhub.Filter{})
	defer fast.Close()
	var got []*v1.Event
	for range 3 {
		e.append(t, "tn-s", "a", "b", "c")
		more, err := drain(t, fast, 3)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, more...)
	}
	if fmt.Sprint(cursors(got)) != "[1 2 3 4 5 6 7 8 9]" {
		t.Fatalf("fast watch: %v", cursors(got))
	}
	held, err := slow.Take()
	if apierr.CodeOf(err) != errcode.Unavailable || len(held) != 4 {
		t.Fatalf("slow watch: %v events, end %v; want 4 then UNAVAILABLE", cursors(held), err)
	}
	resumed := e.hub.Subscribe("tn-s", held[len(held)-1].GetCursor(), watchhub.Filter{})
	defer resumed.Close()
	if rest, err := drain(t, resumed, 5); err != nil || fmt.Sprint(cursors(rest)) != "[5 6 7 8 9]" {
		t.Fatalf("resumed: %v %v", cursors(rest), err)
	}
	if e.hub.Open() != 2 {
		t.Fatalf("%d watches subscribed, want 2 (the slow one was dropped)", e.hub.Open())
	}

	// Replaying more history than the buffer holds is paced by the client, not ended: the
	// first watch of a tenant reads on its own until it reaches the head.
	e.append(t, "tn-r", "a", "b", "c", "a", "b", "c", "a", "b", "c", "a")
	replay := e.hub.Subscribe("tn-r", 0, watchhub.Filter{})
	defer replay.Close()
	if got, err := drain(t, replay, 10); err != nil || fmt.Sprint(cursors(got)) != "[1 2 3 4 5 6 7 8 9 10]" {
		t.Fatalf("replay: %v %v", cursors(got), err)
	}
	e.append(t, "tn-r", "d")
	if got, err := drain(t, replay, 1); err != nil || fmt.Sprint(cursors(got)) != "[11]" {
		t.Fatalf("after the replay: %v %v", cursors(got), err)
	}
}
