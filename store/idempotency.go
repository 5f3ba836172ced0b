package store

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

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

// Idempotency queues the lookup of a create's idempotency key, live or expired. An expired
// record is dropped in the same statement: its meaning has lapsed, and a create that looked its
// key up this way only ever inserts the key in its transaction (Writes.RecordIdempotency). The
// lookup still reports the dropped record, as expired: the statement's arms share one
// snapshot. The resource a live record names is not read here: a replay is rare, and reads it
// after its transaction ends (every create would otherwise send one more statement for it).
func (r *Reads) Idempotency(tenantID, operation, key string, rec *IdempotencyRecord, found *error) {
	readOne(r, scanIdempotency, rec, found,
		`WITH dropped AS (
		   DELETE FROM idempotency_keys WHERE tenant_id = $1 AND operation = $2 AND idem_key = $3 AND expires_at <= now()
		 )
		 SELECT tenant_id, operation, idem_key, request_hash, resource_id, expires_at <= now() FROM idempotency_keys
		  WHERE tenant_id = $1 AND operation = $2 AND idem_key = $3`, tenantID, operation, key)
}

func scanIdempotency(r pgx.Row) (IdempotencyRecord, error) {
	var rec IdempotencyRecord
	err := r.Scan(&rec.TenantID, &rec.Operation, &rec.Key, &rec.RequestHash, &rec.ResourceID, &rec.Expired)
	return rec, err
}

// RecordIdempotency queues the idempotency record of a two-trip create that dropped the key's
// expired record first (Reads.IdempotentLoadBalancer): a plain insert, so that a concurrent
// twin fails it on idempotency_keys_pkey at the server, before COMMIT.
func (w *Writes) RecordIdempotency(rec IdempotencyRecord) {
	w.add("idempotency record", nil, `INSERT INTO idempotency_keys (tenant_id, operation, idem_key, request_hash, resource_id, expires_at)
		 VALUES ($1, $2, $3, $4, $5, now() + $6::INTERVAL)`,
		rec.TenantID, rec.Operation, rec.Key, rec.RequestHash, rec.ResourceID, IdempotencyTTL.String())
}

// PutIdempotency queues PutIdempotency's insert; a live record of the key makes Send fail with
// ErrConflict on idempotency_keys_pkey.
func (w *Writes) PutIdempotency(rec IdempotencyRecord) {
	w.add("idempotency record", idempotencyInserted, sqlPutIdempotency,
		rec.TenantID, rec.Operation, rec.Key, rec.RequestHash, rec.ResourceID, IdempotencyTTL.String())
}
