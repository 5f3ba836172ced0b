package sdk

import (
	"context"
	"errors"
	"iter"
	"sync/atomic"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"

	v1 "better-compute.dev/compute/gen/go/bettercompute/compute/v1"
	c "better-compute.dev/compute/gen/go/bettercompute/compute/v1/computev1connect"
)

// Watcher is a resumable WatchEvents: it remembers the cursor of the last event it delivered and,
// when the stream fails for a reason that may pass (UNAVAILABLE, a cut connection, a replica
// shutting down) or stays silent too long, opens a new one from there. No event is delivered
// twice and none is skipped. Heartbeats are not delivered; they keep the stream open, prove it
// alive, and move the cursor past events the filters leave out.
//
//	w := sdk.NewWatcher(client.Events, &v1.WatchEventsRequest{TenantId: t, ResourceId: lbID})
//	for ev, err := range w.Events(ctx) { ... } // w.Cursor() is where to resume later
type Watcher struct {
	client c.EventServiceClient
	req    *v1.WatchEventsRequest
	cursor atomic.Int64

	// IdleTimeout: a stream with no message (event or heartbeat) for this long is taken for
	// dead and reopened; 0 means 45 s (three heartbeats).
	IdleTimeout time.Duration
	// InitialBackoff and MaxBackoff bound the pause before a reconnect (doubled each failure in
	// a row, with jitter); 0 means 200 ms and 5 s.
	InitialBackoff, MaxBackoff time.Duration
	// Reconnects counts the streams opened after the first (for tests and metrics).
	Reconnects atomic.Int64
}

// NewWatcher returns a watcher of req's tenant from req.After, with req's filters. req is copied.
func NewWatcher(events c.EventServiceClient, req *v1.WatchEventsRequest) *Watcher {
	w := &Watcher{client: events, req: proto.Clone(req).(*v1.WatchEventsRequest)}
	w.cursor.Store(req.GetAfter())
	return w
}

// Cursor is how far the watcher has read: pass it as after to resume.
func (w *Watcher) Cursor() int64 { return w.cursor.Load() }

// Events yields events as they come until ctx ends (then the sequence just ends) or the watch
// fails for good (a permission removed, a token revoked, bad filters): that error is yielded once,
// last. Breaking out of the loop closes the stream.
func (w *Watcher) Events(ctx context.Context) iter.Seq2[*v1.Event, error] {
	idle := w.IdleTimeout
	if idle <= 0 {
		idle = 45 * time.Second
	}
	initial, maxB := w.InitialBackoff, w.MaxBackoff
	if initial <= 0 {
		initial = 200 * time.Millisecond
	}
	if maxB <= 0 {
		maxB = 5 * time.Second
	}
	return func(yield func(*v1.Event, error) bool) {
		failures := 0
		for opened := 0; ; opened++ {
			if opened > 0 {
				w.Reconnects.Add(1)
			}
			stop, progressed, err := w.stream(ctx, idle, yield)
			if stop || ctx.Err() != nil || atDeadline(ctx) {
				return
			}
			if progressed {
				failures = 0
			}
			if err != nil && !streamCut(ctx, err) {
				yield(nil, err)
				return
			}
			failures++
			if failures > 1 && !sleepCtx(ctx, backoff(initial, maxB, failures)) {
				return
			}
		}
	}
}

// stream runs one stream from the cursor. stop: the consumer broke out. progressed: a message came.
func (w *Watcher) stream(ctx context.Context, idle time.Duration, yield func(*v1.Event, error) bool) (stop, progressed bool, err error) {
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	req := proto.Clone(w.req).(*v1.WatchEventsRequest)
	req.After = w.Cursor()
	timer := time.AfterFunc(idle, cancel)
	defer timer.Stop()
	stream, err := w.client.WatchEvents(sctx, connect.NewRequest(req))
	if err != nil {
		return false, false, err
	}
	defer stream.Close()
	for stream.Receive() {
		timer.Reset(idle)
		progressed = true
		m := stream.Msg()
		if hb := m.GetHeartbeat(); hb != nil {
			if hb.GetCursor() > w.Cursor() {
				w.cursor.Store(hb.GetCursor())
			}
			continue
		}
		e := m.GetEvent()
		if e == nil || e.GetCursor() <= w.Cursor() {
			continue
		}
		w.cursor.Store(e.GetCursor())
		if !yield(e, nil) {
			return true, progressed, nil
		}
	}
	err = stream.Err()
	if sctx.Err() != nil && ctx.Err() == nil {
		return false, progressed, nil // went silent: reopen at once
	}
	return false, progressed, err
}

// atDeadline: ctx's deadline has come, or is a few milliseconds off. The server enforces the
// deadline the stream carried (its timeout header) and ends the stream cleanly when it passes,
// which can reach the client a moment before its own timer fires: that end is the deadline's,
// not a cut to reconnect after.
func atDeadline(ctx context.Context) bool {
	dl, ok := ctx.Deadline()
	return ok && time.Until(dl) < 20*time.Millisecond
}

// streamCut: a stream's failure that another stream may not share. Platform refusals (a removed
// permission, a revoked token, bad filters) carry the platform's ErrorInfo and are final, except
// UNAVAILABLE; a failure without one is the connection's (a cut mid-stream reads as unknown or
// internal, a replica going away as unavailable or canceled).
func streamCut(ctx context.Context, err error) bool {
	if ctx.Err() != nil {
		return false
	}
	var ce *connect.Error
	if !errors.As(err, &ce) {
		return false
	}
	if hasPlatformInfo(ce) {
		return transient(ctx, err)
	}
	switch ce.Code() {
	case connect.CodeUnknown, connect.CodeInternal, connect.CodeUnavailable, connect.CodeDeadlineExceeded,
		connect.CodeCanceled, connect.CodeAborted, connect.CodeDataLoss:
		return true
	}
	return false
}
