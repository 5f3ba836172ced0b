package core

import (
	"context"
	"time"

	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"better-compute.dev/compute/apierr"
	"better-compute.dev/compute/authz"
	v1 "better-compute.dev/compute/gen/go/bettercompute/compute/v1"
	"better-compute.dev/compute/store"
)

// DefaultWatchPoll is how often a watch looks for new events when Service.WatchPoll is zero.
// Polling keeps the design portable (no LISTEN/NOTIFY on CockroachDB) and every replica can
// serve any watch.
const DefaultWatchPoll = 250 * time.Millisecond

// ListEvents returns the tenant's events after a cursor.
func (s *Service) ListEvents(ctx context.Context, r *v1.ListEventsRequest) ([]*v1.Event, int64, error) {
	if _, err := s.authorizeList(ctx, authz.EventsRead, r.GetTenantId(), tenantOnly); err != nil {
		return nil, 0, err
	}
	return s.readEvents(ctx, r.GetTenantId(), r.GetAfter(), int(r.GetLimit()), r.GetResourceId())
}

func (s *Service) readEvents(ctx context.Context, tenantID string, after int64, limit int, resourceID string) ([]*v1.Event, int64, error) {
	rows, err := store.ListEvents(ctx, s.DB.Q(), tenantID, after, limit, resourceID)
	if err != nil {
		return nil, after, storeErr(err, "event")
	}
	out := make([]*v1.Event, 0, len(rows))
	next := after
	for _, e := range rows {
		data, err := structpb.NewStruct(e.Data)
		if err != nil {
			return nil, after, apierr.InternalErr(err)
		}
		out = append(out, &v1.Event{Cursor: e.Seq, TenantId: e.TenantID, Type: e.Type, ResourceId: e.ResourceID, Data: data, CreateTime: timestamppb.New(e.CreatedAt), RequestId: e.RequestID})
		next = e.Seq
	}
	return out, next, nil
}

// WatchEvents sends the tenant's events after a cursor, then new ones as they commit, until ctx
// ends. Resuming from the last cursor seen loses nothing: cursors follow commit order. Once the
// caller is authorized, send is called with nil: the transport then opens the stream (headers
// out) so a client learns at once that its watch is established, even before any event.
func (s *Service) WatchEvents(ctx context.Context, r *v1.WatchEventsRequest, send func(*v1.Event) error) error {
	c, err := caller(ctx)
	if err != nil {
		return err
	}
	if err := s.authorizeTenant(ctx, c, authz.EventsRead, r.GetTenantId()); err != nil {
		return err
	}
	if err := send(nil); err != nil {
		return err
	}
	after := r.GetAfter()
	poll := s.WatchPoll
	if poll <= 0 {
		poll = DefaultWatchPoll
	}
	tick := time.NewTicker(poll)
	defer tick.Stop()
	for {
		evs, next, err := s.readEvents(ctx, r.GetTenantId(), after, 500, "")
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		for _, e := range evs {
			if err := send(e); err != nil {
				return err
			}
		}
		after = next
		if len(evs) == 500 {
			continue
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		if err := s.stillAllowed(ctx, c, r.GetTenantId()); err != nil {
			return err
		}
	}
}

// stillAllowed asks again, between polls of a watch, whether the caller's token and permission
// stand: a revoked token ends the stream with UNAUTHENTICATED, a removed
// role with PERMISSION_DENIED. Both answers come from the principal and decision caches, so this
// costs a map lookup most of the time and the caches' 1 s bounds are the stream's too.
func (s *Service) stillAllowed(ctx context.Context, c Caller, tenantID string) error {
	if c.tokenHash != nil {
		now, err := s.authenticateHash(ctx, c.tokenHash)
		if err != nil {
			return err
		}
		c = now
	}
	return s.authorizeTenant(ctx, c, authz.EventsRead, tenantID)
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
	recs, next, err := listPage(ctx, s, r, listing[store.UsageRecord]{
		method: "usage", what: "usage", perm: authz.UsageRead, tenant: r.GetTenantId(), deflt: store.UsageListLimit,
		filters: []string{r.GetMeter(), bound(r.StartTime), bound(r.EndTime)},
		key:     func(u store.UsageRecord) store.Cursor { return byCreated(u.StartedAt, u.ID) },
		query: func(p store.Page) ([]store.UsageRecord, error) {
			if !to.After(from) {
				return nil, apierr.Invalid("endTime", "endTime must be after startTime")
			}
			return store.ListUsagePage(ctx, s.DB.Q(), r.GetTenantId(), r.GetMeter(), from, to, p)
		},
	}, each(infallible(func(u store.UsageRecord) *v1.UsageRecord {
		q := UsageHours(u.StartedAt, u.EndedAt, from, to, now)
		totals[u.Meter] += q
		return &v1.UsageRecord{Meter: u.Meter, ResourceId: u.ResourceID, StartTime: timestamppb.New(u.StartedAt),
			EndTime: tsOrNil(u.EndedAt), Quantity: q}
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
