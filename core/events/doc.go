// Package events is core's part for what happened: the EventService (list, and watch through
// the replica's shared reader, package watchhub) and the UsageService (metered usage).
//
// Store surface (test/repository TestCorePartsStoreSurface): events.go, events_feed.go (the
// watch hub's batch read, through core.Store.ReadEventRanges), usage.go.
package events

import (
	"sync"
	"time"

	"better-compute.dev/compute/core"
	"better-compute.dev/compute/core/events/watchhub"
)

// Options tune the event watches.
type Options struct {
	// Poll is how often an event watch looks for new events; zero is DefaultWatchPoll.
	Poll time.Duration
	// Heartbeat is how long a watch stays silent before it sends a heartbeat; zero is
	// DefaultWatchHeartbeat.
	Heartbeat time.Duration
	// Buffer bounds the events waiting, unsent, for one watch; a watch that exceeds it is
	// ended with UNAVAILABLE and resumes from its cursor. Zero is watchhub.DefaultBuffer.
	Buffer int
}

// Service is the part's use cases, as the server's handlers call them.
type Service struct {
	base *core.Base
	// Options tune the watches; a test may change them before the first watch.
	Options
	// hubOnce makes hub, the replica's shared event reader, at the first watch.
	hubOnce sync.Once
	hub     *watchhub.Hub
}

// New makes the part over the shared base.
func New(base *core.Base, opts Options) *Service { return &Service{base: base, Options: opts} }
