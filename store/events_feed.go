package store

import (
	"context"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"
)

// EventRange asks for a tenant's events with a cursor greater than After.
type EventRange struct {
	TenantID string
	After    int64
}

// EventFeed is what ReadEventRanges read.
type EventFeed struct {
	// Events holds, per range asked (same index), at most the limit's events, oldest first.
	Events [][]Event
	// MoreToNumber: the numbering moved a whole batch, so the inbox may hold more; read again
	// without waiting.
	MoreToNumber bool
}

// ReadEventRanges is the read of a replica's shared event reader: it numbers what has
// committed to the inbox for every tenant the ranges name, then reads every range, in one round
// trip and one implicit transaction, whatever the number of ranges. A read after the numbering
// sees every event numbered before it (events_ordering.go), so each range's events are a gapless
// run of that tenant's seqs after After. Nothing is returned unless the transaction committed:
// seqs of a numbering that rolled back would be handed out again.
func ReadEventRanges(ctx context.Context, db *DB, ranges []EventRange, limit int) (EventFeed, error) {
	if limit <= 0 {
		limit = 100
	}
	tenants := make([]string, 0, len(ranges))
	ids := make([]string, len(ranges))
	afters := make([]int64, len(ranges))
	for i, r := range ranges {
		ids[i], afters[i] = r.TenantID, r.After
		tenants = append(tenants, r.TenantID)
	}
	slices.Sort(tenants)
	tenants = slices.Compact(tenants)
	var feed EventFeed
	err := retryEventRead(ctx, "read event ranges", func() error {
		feed = EventFeed{Events: make([][]Event, len(ranges))}
		b := &pgx.Batch{}
		b.Queue(sqlSequenceEvents, tenants, sequenceBatch)
		b.Queue(sqlReadEventRanges, ids, afters, limit)
		br := db.pool.SendBatch(ctx, b)
		err := readFeed(br, &feed)
		if cerr := br.Close(); err == nil {
			err = cerr
		}
		return err
	})
	if err != nil {
		return EventFeed{}, err
	}
	return feed, nil
}

// readFeed takes the numbering's and the ranges' answers off br into feed.
func readFeed(br pgx.BatchResults, feed *EventFeed) error {
	tag, err := br.Exec()
	if err != nil {
		return err
	}
	feed.MoreToNumber = tag.RowsAffected() >= sequenceBatch
	rows, err := br.Query()
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var k int
		var e Event
		if err := rows.Scan(&k, &e.TenantID, &e.Seq, &e.ID, &e.Type, &e.ResourceID, &e.Data, &e.CreatedAt, &e.RequestID); err != nil {
			return err
		}
		if k < 1 || k > len(feed.Events) {
			return fmt.Errorf("store: event range %d of %d", k, len(feed.Events))
		}
		feed.Events[k-1] = append(feed.Events[k-1], e)
	}
	return rows.Err()
}

// sqlReadEventRanges reads, for each (tenant, after) pair of $1 and $2, at most $3 of the
// tenant's events after the cursor, oldest first, tagged with the pair's position (from 1).
const sqlReadEventRanges = `
SELECT r.k, e.tenant_id, e.seq, e.id, e.type, e.resource_id, e.data, e.created_at, e.request_id
  FROM unnest($1::TEXT[], $2::INT8[]) WITH ORDINALITY AS r (tenant_id, after, k),
       LATERAL (SELECT tenant_id, seq, id, type, resource_id, data, created_at, request_id FROM events
                 WHERE events.tenant_id = r.tenant_id AND events.seq > r.after ORDER BY seq LIMIT $3) e
 ORDER BY r.k, e.seq`
