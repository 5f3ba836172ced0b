package store

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"better-compute.dev/compute/requestid"
)

// Event is a row of the events outbox.
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
// them never wait on each other in a cycle (event_ordering.go gives the whole argument).
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

// IdempotencyRecord is a row of idempotency_keys.
type IdempotencyRecord struct {
	TenantID    string
	Operation   string
	Key         string
	RequestHash []byte
	ResourceID  string
	// Expired: the record outlived IdempotencyTTL (read by Reads.Idempotency, which
	// also sees expired records so that the create replaces them).
	Expired bool
}

// IdempotencyTTL is how long a key is remembered (Stripe keeps them at least 24 hours).
const IdempotencyTTL = 24 * time.Hour

// HashRequest digests a canonical request encoding.
func HashRequest(canonical []byte) []byte {
	h := sha256.Sum256(canonical)
	return h[:]
}

// GetIdempotency returns the live record of a key, or ErrNotFound.
func GetIdempotency(ctx context.Context, q Querier, tenantID, operation, key string) (IdempotencyRecord, error) {
	return one(ctx, q, func(r pgx.Row) (IdempotencyRecord, error) {
		var rec IdempotencyRecord
		err := r.Scan(&rec.TenantID, &rec.Operation, &rec.Key, &rec.RequestHash, &rec.ResourceID)
		return rec, err
	}, `SELECT tenant_id, operation, idem_key, request_hash, resource_id FROM idempotency_keys
	     WHERE tenant_id = $1 AND operation = $2 AND idem_key = $3 AND expires_at > now()`, tenantID, operation, key)
}

// PutIdempotency records a key in the transaction that made the resource, in one statement: an
// expired record of the same key is replaced; a live one is ErrConflict on idempotency_keys_pkey
// (a concurrent twin won the race).
func PutIdempotency(ctx context.Context, q Querier, rec IdempotencyRecord) error {
	tag, err := q.Exec(ctx, sqlPutIdempotency,
		rec.TenantID, rec.Operation, rec.Key, rec.RequestHash, rec.ResourceID, IdempotencyTTL.String())
	if err != nil {
		return fmt.Errorf("store: idempotency record: %w", TranslateError(err))
	}
	return idempotencyInserted(tag)
}

const sqlPutIdempotency = `INSERT INTO idempotency_keys (tenant_id, operation, idem_key, request_hash, resource_id, expires_at)
	 VALUES ($1, $2, $3, $4, $5, now() + $6::INTERVAL)
	 ON CONFLICT (tenant_id, operation, idem_key) DO UPDATE
	   SET request_hash = excluded.request_hash, resource_id = excluded.resource_id,
	       expires_at = excluded.expires_at, created_at = now()
	 WHERE idempotency_keys.expires_at <= now()`

// idempotencyInserted turns "no row written" (a live record of the key exists) into the conflict
// a unique violation would have been.
func idempotencyInserted(tag pgconn.CommandTag) error {
	if tag.RowsAffected() == 0 {
		return &ConstraintError{Kind: ErrConflict, Constraint: "idempotency_keys_pkey", Table: "idempotency_keys", Err: ErrConflict}
	}
	return nil
}

// UsageRecord is a row of usage_records: an interval of metered use.
type UsageRecord struct {
	ID         string
	TenantID   string
	Meter      string
	ResourceID string
	StartedAt  time.Time
	EndedAt    *time.Time
}

// StartUsage opens a metering interval (once per meter and resource).
func StartUsage(ctx context.Context, q Querier, u UsageRecord) error {
	_, err := exec(ctx, q, sqlStartUsage, u.ID, u.TenantID, u.Meter, u.ResourceID)
	return err
}

const sqlStartUsage = `INSERT INTO usage_records (id, tenant_id, meter, resource_id, started_at) VALUES ($1, $2, $3, $4, now())
		 ON CONFLICT (meter, resource_id) DO NOTHING`

// StartUsage queues StartUsage.
func (w *Writes) StartUsage(u UsageRecord) {
	w.add("start usage "+u.Meter+"/"+u.ResourceID, nil, sqlStartUsage, u.ID, u.TenantID, u.Meter, u.ResourceID)
}

// StopUsage queues StopUsage.
func (w *Writes) StopUsage(meter, resourceID string) {
	w.add("stop usage "+meter+"/"+resourceID, nil, sqlStopUsage, meter, resourceID)
}

// StopUsage closes a metering interval if one is open.
func StopUsage(ctx context.Context, q Querier, meter, resourceID string) error {
	_, err := exec(ctx, q, sqlStopUsage, meter, resourceID)
	return err
}

const sqlStopUsage = `UPDATE usage_records SET ended_at = now() WHERE meter = $1 AND resource_id = $2 AND ended_at IS NULL`

// UsageListLimit is the most intervals one usage list answers without paging.
const UsageListLimit = 10000

// ListUsage returns a tenant's intervals overlapping [from, to): at most UsageListLimit.
func ListUsage(ctx context.Context, q Querier, tenantID, meter string, from, to time.Time) ([]UsageRecord, error) {
	return ListUsagePage(ctx, q, tenantID, meter, from, to, Page{Limit: UsageListLimit})
}

// ListUsagePage returns a tenant's intervals overlapping [from, to) by (started_at, id), from after p.
func ListUsagePage(ctx context.Context, q Querier, tenantID, meter string, from, to time.Time, p Page) ([]UsageRecord, error) {
	return collect(ctx, q, func(r pgx.Row) (UsageRecord, error) {
		var u UsageRecord
		err := r.Scan(&u.ID, &u.TenantID, &u.Meter, &u.ResourceID, &u.StartedAt, &u.EndedAt)
		return u, err
	}, `SELECT id, tenant_id, meter, resource_id, started_at, ended_at FROM usage_records
	     WHERE tenant_id = $1 AND ($2 = '' OR meter = $2) AND started_at < $4 AND (ended_at IS NULL OR ended_at > $3)
	       AND ($5 = '' OR (started_at, id) > ($6::TIMESTAMPTZ, $5::TEXT))
	     ORDER BY started_at, id LIMIT $7`, tenantID, meter, from, to, p.afterID(), p.afterTime(), p.limit())
}

// errAwaited ends AwaitIdempotencyTwin's transaction, which must write nothing.
var errAwaited = errors.New("store: twin awaited")

// AwaitIdempotencyTwin returns once no transaction is writing the record of (tenantID,
// operation, key) any more: a twin of a create still in flight has committed or rolled back.
// A create refused from what its reads saw (a quota unit they saw taken) calls it before it
// looks the key up, so that a twin which got the unit and is still committing is found and
// answered as a replay, not refused. It probes with an insert of the key that would wait at
// the unique index for the twin's insert, and writes nothing (the probe is rolled back).
func AwaitIdempotencyTwin(ctx context.Context, db *DB, tenantID, operation, key string) error {
	err := ExecuteLockedTx(ctx, db, func(tx Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO idempotency_keys (tenant_id, operation, idem_key, request_hash, resource_id, expires_at)
			VALUES ($1, $2, $3, '', '', now()) ON CONFLICT DO NOTHING`, tenantID, operation, key); err != nil {
			return fmt.Errorf("store: await idempotency twin: %w", err)
		}
		return errAwaited
	})
	if errors.Is(err, errAwaited) {
		return nil
	}
	return err
}
