package watchhub

import (
	"fmt"
	"slices"
	"sync"

	"better-compute.dev/compute/apierr"
	v1 "better-compute.dev/compute/gen/go/bettercompute/compute/v1"
	"better-compute.dev/compute/gen/go/bettercompute/compute/v1/errcode"
)

// Filter keeps the events about one resource and of some types (empty: any).
type Filter struct {
	ResourceID string
	Types      []string
}

// compile returns the filter with its types sorted, ready for matches.
func (f Filter) compile() Filter {
	f.Types = slices.Clone(f.Types)
	slices.Sort(f.Types)
	return f
}

func (f Filter) matches(e *v1.Event) bool {
	if f.ResourceID != "" && e.GetResourceId() != f.ResourceID {
		return false
	}
	if len(f.Types) > 0 {
		_, found := slices.BinarySearch(f.Types, e.GetType())
		return found
	}
	return true
}

// Sub is one open watch.
type Sub struct {
	hub    *Hub
	filter Filter
	ready  chan struct{}
	// feed is the tenant's feed while the watch is subscribed (guarded by hub.mu).
	feed *feed

	mu sync.Mutex
	// pos is how far the watch has read: every event up to it is in buf, was taken, or was
	// left out by the filter.
	pos int64
	buf []*v1.Event
	// err ends the watch once buf is sent.
	err error
	// behind: the watch was catching up at the last read, so draining its buffer asks for
	// the next read at once.
	behind bool
}

// ErrFellBehind is the message of a watch ended because its client did not take its events as
// fast as they came.
func errFellBehind(buffer int) error {
	return &apierr.Error{Code: errcode.Unavailable, Message: fmt.Sprintf(
		"the watch fell behind (more than %d events were waiting to be sent); resume it with after set to the last cursor received", buffer)}
}

// Ready is signalled when Take has something.
func (s *Sub) Ready() <-chan struct{} { return s.ready }

// Take returns the events to send now, oldest first, and the error that ends the watch once
// they are sent (nil: the watch goes on).
func (s *Sub) Take() ([]*v1.Event, error) {
	s.mu.Lock()
	evs, err := s.buf, s.err
	s.buf = nil
	behind := s.behind
	s.mu.Unlock()
	if len(evs) > 0 && behind {
		s.hub.poke()
	}
	return evs, err
}

// Quiet returns how far the watch has read when nothing is waiting to be sent (the cursor of a
// heartbeat); ok is false otherwise.
func (s *Sub) Quiet() (cursor int64, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pos, len(s.buf) == 0 && s.err == nil
}

// Close ends the watch's subscription.
func (s *Sub) Close() {
	s.hub.mu.Lock()
	defer s.hub.mu.Unlock()
	s.hub.remove(s)
}

func (s *Sub) position() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pos
}

// behindOf notes whether the watch is behind its feed's cursor (every watch is, while the feed
// has none), and returns its position.
func (s *Sub) behindOf(cursor int64, known bool) (pos int64, behind bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.behind = !known || s.pos < cursor
	return s.pos, s.behind
}

// room is how many events the buffer can still take.
func (s *Sub) room() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hub.opts.Buffer - len(s.buf)
}

// follow takes the feed's events for a watch that follows it; false when the buffer overflowed
// (the watch is then ended with errFellBehind).
func (s *Sub) follow(evs []*v1.Event, buffer int) bool {
	ok, _ := s.take(evs, buffer, false)
	return ok
}

// catchUp takes a watch's own read; when the buffer fills it stops there (its next read starts
// after what it took). all: it took the whole read. pos is its position after it.
func (s *Sub) catchUp(evs []*v1.Event, buffer int) (pos int64, all bool) {
	_, all = s.take(evs, buffer, true)
	return s.position(), all
}

// take appends the events after the watch's position that its filter keeps. When the buffer
// is full, a watch catching up stops there (all false); a following watch has fallen behind
// (ok false, and the watch ends with errFellBehind).
func (s *Sub) take(evs []*v1.Event, buffer int, catchingUp bool) (ok, all bool) {
	s.mu.Lock()
	added := false
	ok, all = true, true
	for _, e := range evs {
		if e.GetCursor() <= s.pos {
			continue
		}
		full := len(s.buf) >= buffer && s.filter.matches(e)
		if full && catchingUp {
			all = false
			break
		}
		if full {
			s.err, ok, all = errFellBehind(buffer), false, false
			break
		}
		s.pos = e.GetCursor()
		if s.filter.matches(e) {
			s.buf = append(s.buf, e)
			added = true
		}
	}
	s.mu.Unlock()
	if added || !ok {
		s.signal()
	}
	return ok, all
}

// fail ends the watch with err once what it holds is sent.
func (s *Sub) fail(err error) {
	s.mu.Lock()
	if s.err == nil {
		s.err = err
	}
	s.mu.Unlock()
	s.signal()
}

func (s *Sub) signal() {
	select {
	case s.ready <- struct{}{}:
	default:
	}
}
