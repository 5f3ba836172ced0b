package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"better-compute.dev/compute/requestid"
)

// Event is a tenant's event: what a change recorded, numbered per tenant once sequenced.
type Event struct {
	TenantID   string
	Seq        int64
	ID         string
	Type       string
	ResourceID string
	Data       map[string]any
	CreatedAt  time.Time
	// RequestID is the X-Request-Id of the API call that wrote the event ("" for a
	// reconciler's). Left empty, the append takes the request id of its context.
	RequestID string
}

func scanEvent(r pgx.Row) (Event, error) {
	var e Event
	err := r.Scan(&e.TenantID, &e.Seq, &e.ID, &e.Type, &e.ResourceID, &e.Data, &e.CreatedAt, &e.RequestID)
	return e, err
}

// AppendEvent records an event in the caller's transaction. It goes to the inbox, which no
// other writer shares: the tenant's sequence is assigned later, by SequenceEvents, so a change
// writes no per-tenant counter row and concurrent changes of one tenant do not conflict on one.
// The returned event has no Seq yet.
func AppendEvent(ctx context.Context, q Querier, e Event) (Event, error) {
	data, err := eventData(e)
	if err != nil {
		return Event{}, err
	}
	if e.RequestID == "" {
		e.RequestID = requestid.FromContext(ctx)
	}
	if _, err := q.Exec(ctx, sqlAppendEvent, e.TenantID, e.ID, e.Type, e.ResourceID, data, e.RequestID); err != nil {
		return Event{}, fmt.Errorf("store: append event: %w", err)
	}
	return e, nil
}

// eventData renders an event's data as stored (an empty object when it has none).
func eventData(e Event) ([]byte, error) {
	if e.Data == nil {
		return []byte("{}"), nil
	}
	return json.Marshal(e.Data)
}

const sqlAppendEvent = `INSERT INTO event_inbox (tenant_id, id, type, resource_id, data, request_id) VALUES ($1, $2, $3, $4, $5, $6)`

// appendEventRequestIDArg is the index of request_id among sqlAppendEvent's arguments.
const appendEventRequestIDArg = 5

// sequenceBatch bounds how many inbox events one numbering statement moves.
const sequenceBatch = 1000

// sqlSequenceEvents numbers the committed inbox events of the tenants in $1 in one statement: it
// takes up to sequenceBatch of them, moves them to events with each tenant's next seqs, and
// advances each tenant's counter. A counter row is written only for a tenant that has something
// to number, so idle tenants' readers write nothing. Two numbering statements sharing a tenant
// serialize: the second waits on the rows the first holds (not skipping them, so that a read
// after it sees every event committed before it started) and on the counter row, and numbers
// after it, so seqs become visible in seq order. Inbox rows are locked in (tenant, created_at,
// id) order and counter rows in tenant order, the same in every numbering statement, so two of
// them never wait on each other in a cycle (events_ordering.go gives the whole argument).
const sqlSequenceEvents = `
WITH picked AS (
    SELECT tenant_id, id FROM event_inbox WHERE tenant_id = ANY($1::TEXT[])
     ORDER BY tenant_id, created_at, id LIMIT $2 FOR UPDATE
), moved AS (
    DELETE FROM event_inbox WHERE (tenant_id, id) IN (SELECT tenant_id, id FROM picked)
    RETURNING tenant_id, id, type, resource_id, data, created_at, request_id
), n AS (
    SELECT tenant_id, count(*) AS c FROM moved GROUP BY tenant_id
), counter AS (
    INSERT INTO event_counters (tenant_id, seq) SELECT tenant_id, c FROM n ORDER BY tenant_id
    ON CONFLICT (tenant_id) DO UPDATE SET seq = event_counters.seq + excluded.seq
    RETURNING tenant_id, seq
)
INSERT INTO events (tenant_id, seq, id, type, resource_id, data, created_at, request_id)
SELECT m.tenant_id, counter.seq - n.c + row_number() OVER (PARTITION BY m.tenant_id ORDER BY m.created_at, m.id),
       m.id, m.type, m.resource_id, m.data, m.created_at, m.request_id
  FROM moved m JOIN n ON n.tenant_id = m.tenant_id JOIN counter ON counter.tenant_id = m.tenant_id`

// SequenceEvents numbers the tenant's events that have committed to the inbox, so that a read
// of events after it sees every event committed before it. Readers call it (ListEvents does);
// it is one statement in its own implicit transaction, and is rerun on a serialization failure.
func SequenceEvents(ctx context.Context, q Querier, tenantID string) error {
	return retryEventRead(ctx, "sequence events", func() error {
		_, err := q.Exec(ctx, sqlSequenceEvents, []string{tenantID}, sequenceBatch)
		return err
	})
}

// retryEventRead runs once (a numbering, or a numbering and a read) and runs it again on a
// serialization failure or a deadlock, a few times.
func retryEventRead(ctx context.Context, what string, once func() error) error {
	for attempt := 0; ; attempt++ {
		err := once()
		if err == nil {
			return nil
		}
		if !IsRetryable(err) || attempt >= 5 {
			return TranslateError(fmt.Errorf("store: %s: %w", what, err))
		}
		if err := pauseBeforeRetry(ctx, attempt+1); err != nil {
			return err
		}
	}
}

// ListEvents returns a tenant's events after a cursor, oldest first, having numbered what the
// inbox holds first (two round trips). Run it outside a transaction: the numbering must commit
// before the read for the read to see it.
func ListEvents(ctx context.Context, q Querier, tenantID string, after int64, limit int, resourceID string) ([]Event, error) {
	return ListEventsOfTypes(ctx, q, tenantID, after, limit, resourceID, nil)
}

// ListEventsOfTypes is ListEvents keeping only events of the given types (none: every type).
func ListEventsOfTypes(ctx context.Context, q Querier, tenantID string, after int64, limit int, resourceID string, types []string) ([]Event, error) {
	if limit <= 0 || limit > 1000 {
		limit = 100
	}
	if err := SequenceEvents(ctx, q, tenantID); err != nil {
		return nil, err
	}
	if types == nil {
		types = []string{}
	}
	return collect(ctx, q, scanEvent,
		`SELECT tenant_id, seq, id, type, resource_id, data, created_at, request_id FROM events
		  WHERE tenant_id = $1 AND seq > $2 AND ($4 = '' OR resource_id = $4)
		    AND (cardinality($5::text[]) = 0 OR type = ANY($5::text[])) ORDER BY seq LIMIT $3`,
		tenantID, after, limit, resourceID, types)
}

// EventHead is the greatest cursor of a tenant's numbered events (0: none). A read after it that
// returns fewer rows than its limit has seen every event up to it.
func EventHead(ctx context.Context, q Querier, tenantID string) (int64, error) {
	var head int64
	if err := q.QueryRow(ctx, `SELECT coalesce(max(seq), 0) FROM events WHERE tenant_id = $1`, tenantID).Scan(&head); err != nil {
		return 0, TranslateError(fmt.Errorf("store: event head: %w", err))
	}
	return head, nil
}

// AppendEvent queues AppendEvent's insert.
func (w *Writes) AppendEvent(e Event) error {
	data, err := eventData(e)
	if err != nil {
		return err
	}
	w.add("append event", nil, sqlAppendEvent, e.TenantID, e.ID, e.Type, e.ResourceID, data, e.RequestID)
	if e.RequestID == "" {
		w.eventsWithoutRequest = append(w.eventsWithoutRequest, w.batch.QueuedQueries[len(w.batch.QueuedQueries)-1])
	}
	return nil
}
