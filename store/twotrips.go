package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// ExecuteTwoTrips runs a SERIALIZABLE transaction in two round trips, for the calls whose cost
// a replica a region away from its database pays in round trips (create, update, delete):
//
//  1. BEGIN and every statement whose answer decides (reads, and writes whose answer is read,
//     such as a quota booked), queued by reads into one batch;
//  2. decide looks at those answers (in Go, no database) and returns the writes, which are
//     sent with COMMIT as the second batch.
//
// Retries follow ExecuteTx: a lost serialization race runs reads and decide again on a fresh
// transaction, so both must have no effect outside it and must set every value they fill.
// decide's error rolls the transaction back (one more round trip, on the error path only).
// A connection fault while the second batch is out is ErrCommitUnknown: COMMIT may have run.
func ExecuteTwoTrips(ctx context.Context, db *DB, reads func(r *Reads), decide func() (*Writes, error)) error {
	return retrying(ctx, func(ctx context.Context) error { return runTwoTripsOnce(ctx, db, false, reads, decide) })
}

// ExecuteLockedTwoTrips is ExecuteTwoTrips for a transaction whose decisions rest on row locks
// instead of SERIALIZABLE's read tracking: a create that books its quota among its reads, an
// update or delete that reads its row FOR UPDATE first. On PostgreSQL it runs at READ COMMITTED
// and every read of Reads that decides locks its rows FOR SHARE (Reads.locked); on CockroachDB
// it is SERIALIZABLE like every other transaction. The argument for why a create keeps the
// seed's rules on both engines is in booking.go, for an update and a delete in lockorder.go; a
// transaction of another shape must not use it.
func ExecuteLockedTwoTrips(ctx context.Context, db *DB, reads func(r *Reads), decide func() (*Writes, error)) error {
	return retrying(ctx, func(ctx context.Context) error { return runTwoTripsOnce(ctx, db, !db.cockroach, reads, decide) })
}

// runTwoTripsOnce is one attempt of ExecuteTwoTrips (locked false) or ExecuteLockedTwoTrips.
func runTwoTripsOnce(ctx context.Context, db *DB, locked bool, reads func(r *Reads), decide func() (*Writes, error)) (err error) {
	conn, err := db.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("store: acquire: %w", err)
	}
	// A connection left inside a transaction (a rollback that could not be sent) is closed by
	// the pool on release rather than reused.
	defer conn.Release()
	defer rollbackOnPanic(ctx, conn)
	r := Reads{locked: locked}
	if locked {
		r.exec(`BEGIN ISOLATION LEVEL READ COMMITTED`)
	} else {
		r.exec(`BEGIN ISOLATION LEVEL SERIALIZABLE`)
	}
	reads(&r)
	if err := r.send(ctx, conn); err != nil {
		rollbackConn(ctx, conn)
		return retryableDeadlock(err)
	}
	return finishTwoTrips(ctx, conn, &r, decide)
}

// finishTwoTrips decides on the answers of a transaction's first round trip r, which conn holds
// open, and sends the writes with COMMIT.
func finishTwoTrips(ctx context.Context, conn *pgxpool.Conn, r *Reads, decide func() (*Writes, error)) error {
	w, err := decide()
	if err == nil {
		err = r.untaken()
	}
	if err != nil {
		rollbackConn(ctx, conn)
		return retryableDeadlock(err)
	}
	if w == nil {
		w = &Writes{}
	}
	dry := w.dryRun
	w = w.fused(ctx)
	for _, it := range w.items {
		if it.clientCheck {
			rollbackConn(ctx, conn)
			return fmt.Errorf("store: %s is judged by the client and cannot ride with COMMIT", it.what)
		}
	}
	commit := len(w.items)
	if dry {
		w.add("rollback", nil, `ROLLBACK`)
	} else {
		w.add("commit", nil, `COMMIT`)
	}
	failed, err := w.send(ctx, conn)
	switch {
	case err == nil:
		return nil
	case dry && failed == commit:
		// The rehearsal's ROLLBACK failed: nothing was written either way.
		rollbackConn(ctx, conn)
		return retryableDeadlock(err)
	case dry && sqlState(err) == "" && isConnectionFault(err):
		// The connection broke: an open transaction that was never committed wrote nothing.
		return err
	case sqlState(err) == "" && isConnectionFault(err):
		// The batch carrying COMMIT went out and no answer came back: the outcome is unknown.
		return commitUnknown(fmt.Errorf("%w: %w", errAtCommit, err))
	case failed == commit:
		// The server answered COMMIT with an error (a serialization failure found at commit):
		// nothing was written, and ExecuteTwoTrips may run the whole transaction again.
		rollbackConn(ctx, conn)
		return retryableDeadlock(fmt.Errorf("%w: %w", errAtCommit, err))
	default:
		// A write before COMMIT failed: the server skipped the rest, COMMIT included.
		rollbackConn(ctx, conn)
		return retryableDeadlock(err)
	}
}

// rollbackOnPanic, deferred right after a connection is acquired, ends its open transaction
// when the code using it panics, and panics on (the pool would otherwise get the connection back
// inside the transaction).
func rollbackOnPanic(ctx context.Context, conn *pgxpool.Conn) {
	if p := recover(); p != nil {
		rollbackConn(ctx, conn)
		panic(p)
	}
}

// rollbackConn ends the open transaction of conn, if any. A failure leaves the connection
// inside it, and the pool closes it on release.
func rollbackConn(ctx context.Context, conn *pgxpool.Conn) {
	if conn.Conn().PgConn().TxStatus() != 'I' {
		_, _ = conn.Exec(context.WithoutCancel(ctx), `ROLLBACK`)
	}
}

// Reads collects the statements of ExecuteTwoTrips's first round trip. Each method fills the
// caller's values when the batch's answers arrive; a row that does not exist leaves its error
// value at ErrNotFound.
type Reads struct {
	batch pgx.Batch
	items []func(br pgx.BatchResults) error
	// locked: the reads run at READ COMMITTED (ExecuteLockedTwoTrips on PostgreSQL), where a
	// row read to decide must be locked FOR SHARE so that nobody changes it before COMMIT.
	locked bool
	// takes are the quota units the reads saw free, which the writes must take (BookQuota).
	takes []*QuotaBooking
}

// shared returns sql as a read that decides: locking its rows FOR SHARE in a locked
// transaction, unchanged in a SERIALIZABLE one (which tracks the read itself).
func (r *Reads) shared(plain, forShare string) string {
	if r.locked {
		return forShare
	}
	return plain
}

func (r *Reads) send(ctx context.Context, to batchSender) error {
	br := to.SendBatch(ctx, &r.batch)
	var first error
	for _, read := range r.items {
		if err := read(br); err != nil && first == nil {
			first = fmt.Errorf("store: reads: %w", TranslateError(err))
		}
	}
	// Close reports a failure of the batch itself (nothing left unread failed).
	if err := br.Close(); err != nil && first == nil {
		first = fmt.Errorf("store: reads: %w", TranslateError(err))
	}
	return first
}

// exec queues a statement whose answer is only its success.
func (r *Reads) exec(sql string, args ...any) {
	r.batch.Queue(sql, args...)
	r.items = append(r.items, func(br pgx.BatchResults) error { _, err := br.Exec(); return err })
}

// readOne queues a query of at most one row: *found is nil when it came, ErrNotFound when not.
func readOne[T any](r *Reads, scan func(pgx.Row) (T, error), out *T, found *error, sql string, args ...any) {
	r.batch.Queue(sql, args...)
	r.items = append(r.items, func(br pgx.BatchResults) error {
		v, err := scan(br.QueryRow())
		if errors.Is(err, pgx.ErrNoRows) {
			var zero T
			*out, *found = zero, ErrNotFound
			return nil
		}
		if err != nil {
			return err
		}
		*out, *found = v, nil
		return nil
	})
}

// readAll queues a query of any number of rows.
func readAll[T any](r *Reads, scan func(pgx.Row) (T, error), out *[]T, sql string, args ...any) {
	r.batch.Queue(sql, args...)
	r.items = append(r.items, func(br pgx.BatchResults) error {
		rows, err := br.Query()
		if err != nil {
			return err
		}
		defer rows.Close()
		var all []T
		for rows.Next() {
			v, err := scan(rows)
			if err != nil {
				return err
			}
			all = append(all, v)
		}
		if err := rows.Err(); err != nil {
			return err
		}
		*out = all
		return nil
	})
}

// readAffected queues a write whose answer is the number of rows it touched.
func readAffected(r *Reads, n *int64, sql string, args ...any) {
	r.batch.Queue(sql, args...)
	r.items = append(r.items, func(br pgx.BatchResults) error {
		tag, err := br.Exec()
		if err != nil {
			return err
		}
		*n = tag.RowsAffected()
		return nil
	})
}

// Pool queues GetPool.
func (r *Reads) Pool(id string, out *Pool, found *error) {
	readOne(r, scanPool, out, found, r.shared(sqlGetPool, sqlGetPool+forShare), id)
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

// Project queues GetProject.
func (r *Reads) Project(tenantID, id string, out *Project, found *error) {
	readOne(r, scanProject, out, found, r.shared(sqlGetProject, sqlGetProject+forShare), tenantID, id)
}

// Subnet queues GetSubnet.
func (r *Reads) Subnet(id string, out *Subnet, found *error) {
	readOne(r, scanSubnet, out, found, r.shared(sqlGetSubnet, sqlGetSubnet+forShare), id)
}

// Instances queues the instances named by ids and, when of is not "", those load balancer of
// targets today (an update re-checks the targets it keeps).
func (r *Reads) Instances(ids []string, of string, out *[]Instance) {
	readAll(r, scanInstance, out, r.shared(sqlTargetInstances, sqlTargetInstances+forShare), ids, of)
}

const sqlTargetInstances = `SELECT ` + instanceCols + ` FROM instances
		WHERE id IN (SELECT unnest($1::text[]) UNION SELECT instance_id FROM load_balancer_instance_targets WHERE load_balancer_id = $2) ORDER BY id`

// The target reads name their rows by one IN over a union rather than "id = ANY($1) OR id IN
// (...)": an OR across a subquery cannot be answered from the primary key, so the planner reads
// the whole table (test/explain).

// LoadBalancers queues the load balancers named by ids and those global load balancer of
// targets today.
func (r *Reads) LoadBalancers(ids []string, of string, out *[]LoadBalancer) {
	readAll(r, scanLoadBalancer, out, r.shared(sqlTargetLoadBalancers, sqlTargetLoadBalancers+forShare), ids, of)
}

const sqlTargetLoadBalancers = `SELECT ` + loadBalancerCols + ` FROM load_balancers
		WHERE id IN (SELECT unnest($1::text[]) UNION SELECT regional_id FROM load_balancer_lb_targets WHERE global_id = $2) ORDER BY id`

// Certificates queues the certificates named by ids and those load balancer of uses today.
func (r *Reads) Certificates(ids []string, of string, out *[]Certificate) {
	readAll(r, scanCertificate, out, r.shared(sqlTargetCertificates, sqlTargetCertificates+forShare), ids, of)
}

const sqlTargetCertificates = `SELECT ` + certificateCols + ` FROM certificates
		WHERE id IN (SELECT unnest($1::text[]) UNION SELECT certificate_id FROM load_balancer_certificates WHERE load_balancer_id = $2) ORDER BY id`

// LoadBalancerForUpdate queues GetLoadBalancerForUpdate.
func (r *Reads) LoadBalancerForUpdate(id string, out *LoadBalancer, found *error) {
	readOne(r, scanLoadBalancer, out, found, sqlLoadBalancerForUpdate, id)
}

// GlobalsTargeting queues GlobalsTargeting.
func (r *Reads) GlobalsTargeting(regionalID string, out *[]string) {
	readAll(r, scanString, out, sqlGlobalsTargeting, regionalID)
}

func scanIdempotency(r pgx.Row) (IdempotencyRecord, error) {
	var rec IdempotencyRecord
	err := r.Scan(&rec.TenantID, &rec.Operation, &rec.Key, &rec.RequestHash, &rec.ResourceID, &rec.Expired)
	return rec, err
}

// InsertLoadBalancer queues InsertLoadBalancer; out receives the row as written. Only what the
// server makes is sent back (its creation time): the rest is what was sent and the columns'
// defaults, which newLoadBalancerRow knows (TestInsertedRowAsRead compares the two), so a
// create's answer does not carry its own settings back over the wire and through the decoders.
func (w *Writes) InsertLoadBalancer(l LoadBalancer, out *LoadBalancer) {
	w.addRow("insert load balancer", func(row pgx.Row) error {
		var created time.Time
		if err := row.Scan(&created); err != nil {
			return err
		}
		*out = newLoadBalancerRow(l, created)
		return nil
	}, sqlInsertLoadBalancerCreated,
		l.ID, l.TenantID, l.ProjectID, l.PoolID, l.AccountID, l.Name, l.Description, l.Scope, l.Region, l.SubnetID, l.Spec)
}

// sqlInsertLoadBalancerCreated is sqlInsertLoadBalancer returning the creation time alone.
const sqlInsertLoadBalancerCreated = sqlInsertLoadBalancerValues + ` RETURNING created_at`

// newLoadBalancerRow is the row sqlInsertLoadBalancer writes for l at created: l's values and the
// defaults of load_balancers' other columns. Spec is the JSON sent, which a read returns as the
// server re-spaced it (the same settings).
func newLoadBalancerRow(l LoadBalancer, created time.Time) LoadBalancer {
	return LoadBalancer{
		ID: l.ID, TenantID: l.TenantID, ProjectID: l.ProjectID, PoolID: l.PoolID, AccountID: l.AccountID, Name: l.Name,
		Description: l.Description, Scope: l.Scope, Region: l.Region, SubnetID: l.SubnetID, Spec: l.Spec,
		SpecVersion: 1, State: "pending", ReachedInstanceIDs: []string{}, ReachedMachineIDs: []string{},
		CreatedAt: created, UpdatedAt: created,
	}
}

// UpdateLoadBalancerSpec queues UpdateLoadBalancerSpec.
func (w *Writes) UpdateLoadBalancerSpec(id string, spec []byte, state string, out *LoadBalancer) {
	w.loadBalancerRow("update load balancer", out, sqlUpdateLoadBalancerSpec, id, spec, state)
}

// SetLoadBalancerState queues SetLoadBalancerState.
func (w *Writes) SetLoadBalancerState(id, state string, out *LoadBalancer) {
	w.loadBalancerRow("load balancer state", out, sqlSetLoadBalancerState, id, state)
}

// loadBalancerRow queues a write that returns a load balancer row, scanned into out.
func (w *Writes) loadBalancerRow(what string, out *LoadBalancer, sql string, args ...any) {
	w.addRow(what, func(row pgx.Row) error {
		v, err := scanLoadBalancer(row)
		*out = v
		return err
	}, sql, args...)
}

// RecordIdempotency queues the idempotency record of a two-trip create that dropped the key's
// expired record first (Reads.IdempotentLoadBalancer): a plain insert, so that a concurrent
// twin fails it on idempotency_keys_pkey at the server, before COMMIT.
func (w *Writes) RecordIdempotency(rec IdempotencyRecord) {
	w.add("idempotency record", nil, `INSERT INTO idempotency_keys (tenant_id, operation, idem_key, request_hash, resource_id, expires_at)
		 VALUES ($1, $2, $3, $4, $5, now() + $6::INTERVAL)`,
		rec.TenantID, rec.Operation, rec.Key, rec.RequestHash, rec.ResourceID, IdempotencyTTL.String())
}
