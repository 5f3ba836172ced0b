package events

import (
	"context"
	"time"

	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"better-compute.dev/compute/apierr"
	"better-compute.dev/compute/authz"
	"better-compute.dev/compute/core"
	"better-compute.dev/compute/core/events/watchhub"
	v1 "better-compute.dev/compute/gen/go/bettercompute/compute/v1"
	"better-compute.dev/compute/store"
)

// DefaultWatchPoll is how often the replica's shared event reader looks for new events when
// Service.WatchPoll is zero. Polling keeps the design portable (no LISTEN/NOTIFY on CockroachDB)
// and every replica can serve any watch.
const DefaultWatchPoll = 250 * time.Millisecond

// DefaultWatchHeartbeat is how long a watch stays silent before it sends a heartbeat, when
// Service.WatchHeartbeat is zero: proxies and load balancers commonly cut a connection idle for
// 30-60 s.
const DefaultWatchHeartbeat = 15 * time.Second

// ListEvents returns the tenant's events after a cursor.
func (s *Service) ListEvents(ctx context.Context, r *v1.ListEventsRequest) ([]*v1.Event, int64, error) {
	if _, err := s.base.AuthorizeList(ctx, authz.EventsRead, r.GetTenantId(), core.TenantOnly); err != nil {
		return nil, 0, err
	}
	return s.readEvents(ctx, r.GetTenantId(), r.GetAfter(), int(r.GetLimit()), r.GetResourceId(), r.GetTypes())
}

func (s *Service) readEvents(ctx context.Context, tenantID string, after int64, limit int, resourceID string, types []string) ([]*v1.Event, int64, error) {
	rows, err := store.ListEventsOfTypes(ctx, s.base.Store.Q(), tenantID, after, limit, resourceID, types)
	if err != nil {
		return nil, after, core.StoreErr(err, "event")
	}
	out := make([]*v1.Event, 0, len(rows))
	next := after
	for _, e := range rows {
		m, err := eventMessage(e)
		if err != nil {
			return nil, after, err
		}
		out = append(out, m)
		next = e.Seq
	}
	return out, next, nil
}

// eventMessage is the API's form of a stored event.
func eventMessage(e store.Event) (*v1.Event, error) {
	data, err := structpb.NewStruct(e.Data)
	if err != nil {
		return nil, apierr.InternalErr(err)
	}
	return &v1.Event{Cursor: e.Seq, TenantId: e.TenantID, Type: e.Type, ResourceId: e.ResourceID, Data: data, CreateTime: timestamppb.New(e.CreatedAt), RequestId: e.RequestID}, nil
}

// watches is the replica's shared event reader, made at the first watch.
func (s *Service) watches() *watchhub.Hub {
	s.hubOnce.Do(func() {
		poll := s.Poll
		if poll <= 0 {
			poll = DefaultWatchPoll
		}
		s.hub = watchhub.New(watchhub.Options{Read: s.base.Store.ReadEventRanges, Poll: poll, Buffer: s.Buffer, Convert: eventMessage})
	})
	return s.hub
}

// WatchEvents sends the tenant's events after a cursor (only those about resource_id and of
// types, when given), then new ones as they commit, until ctx ends. Resuming from the last cursor
// seen loses nothing: cursors follow commit order. Once the caller is authorized, send is called
// with nil: the transport then opens the stream (headers out) so a client learns at once that its
// watch is established, even before any event. A stream that sent nothing for WatchHeartbeat gets
// a heartbeat carrying how far the watch has read (filtered-out events included). The events
// come from the replica's shared reader (package watchhub), which reads the event log once per
// WatchPoll for every watch of the replica; between two of its reads the watch asks again,
// through the caches, whether its caller may still read the tenant's events.
func (s *Service) WatchEvents(ctx context.Context, r *v1.WatchEventsRequest, send func(*v1.WatchEventsResponse) error) error {
	c, err := core.RequireCaller(ctx)
	if err != nil {
		return err
	}
	if err := s.base.AuthorizeTenant(ctx, c, authz.EventsRead, r.GetTenantId()); err != nil {
		return err
	}
	if err := send(nil); err != nil {
		return err
	}
	poll := s.Poll
	if poll <= 0 {
		poll = DefaultWatchPoll
	}
	quiet := s.Heartbeat
	if quiet <= 0 {
		quiet = DefaultWatchHeartbeat
	}
	sub := s.watches().Subscribe(r.GetTenantId(), r.GetAfter(), watchhub.Filter{ResourceID: r.GetResourceId(), Types: r.GetTypes()})
	defer sub.Close()
	recheck := time.NewTicker(poll)
	defer recheck.Stop()
	heartbeat := time.NewTimer(quiet)
	defer heartbeat.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-sub.Ready():
			evs, end := sub.Take()
			for _, e := range evs {
				if err := send(&v1.WatchEventsResponse{Event: e}); err != nil {
					return err
				}
			}
			if len(evs) > 0 {
				heartbeat.Reset(quiet)
			}
			if end != nil {
				return end
			}
		case <-heartbeat.C:
			// Nothing waiting: every event up to the cursor was sent or left out.
			if cursor, ok := sub.Quiet(); ok {
				if err := send(&v1.WatchEventsResponse{Heartbeat: &v1.WatchHeartbeat{Time: timestamppb.Now(), Cursor: cursor}}); err != nil {
					return err
				}
			}
			heartbeat.Reset(quiet)
		case <-recheck.C:
			if err := s.stillAllowed(ctx, c, r.GetTenantId()); err != nil {
				return err
			}
		}
	}
}

// stillAllowed asks again, between polls of a watch, whether the caller's token and permission
// stand: a revoked token ends the stream with UNAUTHENTICATED, a removed
// role with PERMISSION_DENIED. Both answers come from the principal and decision caches, so this
// costs a map lookup most of the time and the caches' 1 s bounds are the stream's too.
func (s *Service) stillAllowed(ctx context.Context, c core.Caller, tenantID string) error {
	c, err := s.base.Reauthenticate(ctx, c)
	if err != nil {
		return err
	}
	return s.base.AuthorizeTenant(ctx, c, authz.EventsRead, tenantID)
}

// ListUsage returns metered usage overlapping a window, clipped to it, with per-meter totals: at
// most store.UsageListLimit records (ListUsagePage without the token).
func (s *Service) ListUsage(ctx context.Context, r *v1.ListUsageRequest) ([]*v1.UsageRecord, map[string]float64, error) {
	recs, totals, _, err := s.ListUsagePage(ctx, r)
	return recs, totals, err
}

// ListUsagePage returns at most store.UsageListLimit records, or one page, in (start, id) order,
// the totals of those records per meter, and the next page's token. A window left open ends at
// each page's now.
func (s *Service) ListUsagePage(ctx context.Context, r *v1.ListUsageRequest) ([]*v1.UsageRecord, map[string]float64, string, error) {
	now := time.Now()
	from, to := time.Unix(0, 0), now
	if r.StartTime != nil {
		from = r.GetStartTime().AsTime()
	}
	if r.EndTime != nil {
		to = r.GetEndTime().AsTime()
	}
	bound := func(t *timestamppb.Timestamp) string {
		if t == nil {
			return ""
		}
		return t.AsTime().Format(time.RFC3339Nano)
	}
	totals := map[string]float64{}
	recs, next, err := core.ListPage(ctx, s.base, r, core.Listing[store.UsageRecord]{
		Method: "usage", What: "usage", Perm: authz.UsageRead, Tenant: r.GetTenantId(), Default: store.UsageListLimit,
		Filters: []string{r.GetMeter(), bound(r.StartTime), bound(r.EndTime)},
		Key:     func(u store.UsageRecord) store.Cursor { return core.ByCreated(u.StartedAt, u.ID) },
		Query: func(p store.Page) ([]store.UsageRecord, error) {
			if !to.After(from) {
				return nil, apierr.Invalid("endTime", "endTime must be after startTime")
			}
			return store.ListUsagePage(ctx, s.base.Store.Q(), r.GetTenantId(), r.GetMeter(), from, to, p)
		},
	}, core.Each(core.Infallible(func(u store.UsageRecord) *v1.UsageRecord {
		q := UsageHours(u.StartedAt, u.EndedAt, from, to, now)
		totals[u.Meter] += q
		return &v1.UsageRecord{Meter: u.Meter, ResourceId: u.ResourceID, StartTime: timestamppb.New(u.StartedAt),
			EndTime: core.TimeOrNil(u.EndedAt), Quantity: q}
	})))
	if err != nil {
		return nil, nil, "", err
	}
	return recs, totals, next, nil
}

// UsageHours is the part of [start, end) (end nil: still running, up to now) inside [from, to), in hours.
func UsageHours(start time.Time, end *time.Time, from, to, now time.Time) float64 {
	stop := now
	if end != nil {
		stop = *end
	}
	if stop.After(to) {
		stop = to
	}
	if start.Before(from) {
		start = from
	}
	if !stop.After(start) {
		return 0
	}
	return stop.Sub(start).Hours()
}
