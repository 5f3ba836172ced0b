// Package watchhub serves every event watch of a replica from one reader. Each poll interval
// the hub numbers and reads, in one round trip and one database transaction, the new events of
// every tenant that has a watch open here (store.ReadEventRanges), and hands each watch the
// events its filters keep, in memory. What the replica costs the database while watches are
// idle is one transaction per interval, however many watches are open.
//
// Order: each tenant has a feed whose cursor says how far the hub has read that tenant's
// events; a watch at or past its feed's cursor is served by the feed's read. A watch that
// starts (or resumes) behind the cursor gets a read of its own, in the same statement, until it
// has caught up; from then on the feed serves it. A new feed has no cursor until its first
// watch has read up to the tenant's head that way, so replaying a long history is paced by
// that watch's client, like any catching up. Every read returns a gapless run of seqs
// (store's ordering argument), and a watch takes only events after its own position, so no
// watch skips or repeats an event.
//
// A slow consumer never holds up the others: the hub only appends to a watch's bounded buffer,
// and a watch whose buffer overflows is ended with UNAVAILABLE (ErrFellBehind), from which the
// client resumes with its last cursor.
package watchhub

import (
	"context"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"better-compute.dev/compute/apierr"
	v1 "better-compute.dev/compute/gen/go/bettercompute/compute/v1"
	"better-compute.dev/compute/gen/go/bettercompute/compute/v1/errcode"
	"better-compute.dev/compute/store"
)

// DefaultBuffer is how many events may wait, unsent, for one watch before it is ended as having
// fallen behind.
const DefaultBuffer = 1000

// Bounds of one read: each range returns at most rangeLimit events, and the limit shrinks as the
// ranges grow so that one read returns at most about rowsPerRead rows.
const (
	rangeLimit    = 500
	minRangeLimit = 10
	rowsPerRead   = 50_000
)

// readTimeout bounds one read of the event log.
const readTimeout = 30 * time.Second

// failuresBeforeEnding is how many reads in a row may fail before every watch is ended with
// UNAVAILABLE (its client then resumes, possibly on another replica); fewer are retried at the
// next interval.
const failuresBeforeEnding = 3

// Options configure a Hub.
type Options struct {
	// Read reads the events of several tenants after their cursors (core.Store.ReadEventRanges).
	Read func(ctx context.Context, ranges []store.EventRange, limit int) (store.EventFeed, error)
	// Poll is the interval between reads.
	Poll time.Duration
	// Buffer bounds the unsent events of one watch (0: DefaultBuffer).
	Buffer int
	// Convert makes the message of an event, once for every watch that receives it.
	Convert func(store.Event) (*v1.Event, error)
}

// Hub is a replica's shared event reader. It reads only while at least one watch is open.
type Hub struct {
	opts Options
	wake chan struct{}

	reads atomic.Int64

	mu       sync.Mutex
	feeds    map[string]*feed
	running  bool
	failures int
}

// feed is what the hub knows of one tenant: how far it has read its events, and its watches.
type feed struct {
	tenant string
	cursor int64
	// known: cursor is set (a watch of the feed has read up to the head once).
	known bool
	subs  map[*Sub]struct{}
}

// New returns a hub; it starts reading when the first watch subscribes.
func New(opts Options) *Hub {
	if opts.Buffer <= 0 {
		opts.Buffer = DefaultBuffer
	}
	return &Hub{opts: opts, wake: make(chan struct{}, 1), feeds: map[string]*feed{}}
}

// Subscribe opens a watch of the tenant's events after the cursor that its filter keeps. The
// caller must have authorized the caller for the tenant, and must Close the watch.
func (h *Hub) Subscribe(tenantID string, after int64, f Filter) *Sub {
	s := &Sub{hub: h, filter: f.compile(), ready: make(chan struct{}, 1), pos: after}
	h.mu.Lock()
	fd := h.feeds[tenantID]
	if fd == nil {
		// Until a watch of the tenant has caught up, every watch of it reads on its own.
		fd = &feed{tenant: tenantID, subs: map[*Sub]struct{}{}}
		h.feeds[tenantID] = fd
	}
	fd.subs[s] = struct{}{}
	s.feed = fd
	if !h.running {
		h.running = true
		go h.run()
	}
	h.mu.Unlock()
	h.poke()
	return s
}

// Open is the number of watches subscribed now.
func (h *Hub) Open() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, fd := range h.feeds {
		n += len(fd.subs)
	}
	return n
}

// Reads is how many reads of the event log the hub has made.
func (h *Hub) Reads() int64 { return h.reads.Load() }

// poke asks for a read now (a watch opened or drained its buffer while catching up).
func (h *Hub) poke() {
	select {
	case h.wake <- struct{}{}:
	default:
	}
}

// remove takes a watch off its feed, and the feed off the hub when it was the last; h.mu held.
func (h *Hub) remove(s *Sub) {
	fd := s.feed
	if fd == nil {
		return
	}
	s.feed = nil
	delete(fd.subs, s)
	if len(fd.subs) == 0 && h.feeds[fd.tenant] == fd {
		delete(h.feeds, fd.tenant)
	}
}

// run reads every poll interval (at once when poked, or when a read came back full) until no
// watch is left.
func (h *Hub) run() {
	tick := time.NewTicker(h.opts.Poll)
	defer tick.Stop()
	again := true
	for {
		if !again {
			select {
			case <-tick.C:
			case <-h.wake:
			}
		}
		p, ok := h.plan()
		if !ok {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), readTimeout)
		read, err := h.opts.Read(ctx, p.ranges, p.limit)
		cancel()
		h.reads.Add(1)
		again = h.deliver(p, read, err)
	}
}

// plan lists the ranges of the next read: per feed, the watches catching up (each after its own
// position) and then the feed itself. ok is false, and the hub stops, when no watch is open.
type plan struct {
	ranges []store.EventRange
	// targets[i] is whom range i serves: a watch catching up (sub set) or a feed.
	targets []target
	limit   int
}

type target struct {
	feed *feed
	sub  *Sub
}

func (h *Hub) plan() (plan, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.feeds) == 0 {
		h.running = false
		return plan{}, false
	}
	var behind []*Sub
	for _, fd := range h.feeds {
		for s := range fd.subs {
			if _, late := s.behindOf(fd.cursor, fd.known); late {
				behind = append(behind, s)
			}
		}
	}
	p := plan{limit: max(minRangeLimit, min(rangeLimit, rowsPerRead/(len(h.feeds)+len(behind))))}
	for _, s := range behind {
		if s.room() > 0 {
			p.ranges = append(p.ranges, store.EventRange{TenantID: s.feed.tenant, After: s.position()})
			p.targets = append(p.targets, target{feed: s.feed, sub: s})
		}
	}
	// A feed's range comes after its catching-up watches' ranges: a watch that has caught up
	// in this read takes the feed's events of the same read.
	for _, fd := range h.feeds {
		if fd.known {
			p.ranges = append(p.ranges, store.EventRange{TenantID: fd.tenant, After: fd.cursor})
			p.targets = append(p.targets, target{feed: fd})
		}
	}
	return p, true
}

// deliver hands a read's events to the watches and reports whether to read again at once.
func (h *Hub) deliver(p plan, read store.EventFeed, err error) (again bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if err != nil {
		h.failures++
		if h.failures >= failuresBeforeEnding {
			h.failures = 0
			end := &apierr.Error{Code: errcode.Unavailable, Cause: err,
				Message: "the event log cannot be read now; resume the watch with after set to the last cursor received"}
			for _, fd := range h.feeds {
				for s := range fd.subs {
					s.fail(end)
					h.remove(s)
				}
			}
		}
		return false
	}
	h.failures = 0
	again = read.MoreToNumber
	var fell []*Sub
	for i, t := range p.targets {
		evs, err := h.convert(t.feed.tenant, read.Events[i])
		if err != nil {
			served := []*Sub{t.sub}
			if t.sub == nil {
				served = slices.Collect(maps.Keys(t.feed.subs))
			}
			for _, s := range served {
				s.fail(apierr.InternalErr(err))
			}
			fell = append(fell, served...)
			continue
		}
		if len(evs) == p.limit {
			again = true
		}
		if t.sub != nil {
			if t.sub.feed != t.feed {
				continue
			}
			pos, all := t.sub.catchUp(evs, h.opts.Buffer)
			if all && len(read.Events[i]) < p.limit && !t.feed.known {
				// The watch read everything up to the head: the feed starts there.
				t.feed.cursor, t.feed.known = pos, true
			}
			continue
		}
		from := p.ranges[i].After
		for s := range t.feed.subs {
			if s.position() >= from && !s.follow(evs, h.opts.Buffer) {
				fell = append(fell, s)
			}
		}
		if n := len(evs); n > 0 {
			t.feed.cursor = max(t.feed.cursor, evs[n-1].GetCursor())
		}
	}
	for _, s := range fell {
		h.remove(s)
	}
	return again
}

// convert makes the messages of one range's events, keeping only the tenant's (the read is by
// tenant; this is the last guard of tenant isolation).
func (h *Hub) convert(tenant string, rows []store.Event) ([]*v1.Event, error) {
	out := make([]*v1.Event, 0, len(rows))
	for _, e := range rows {
		if e.TenantID != tenant {
			continue
		}
		m, err := h.opts.Convert(e)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}
