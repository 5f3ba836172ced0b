package store

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/cockroach-go/v2/crdb"
	"github.com/jackc/pgx/v5"
)

// serializable is the isolation every store transaction uses unless told otherwise, so that
// PostgreSQL in tests refuses the same anomalies CockroachDB refuses in production.
var serializable = pgx.TxOptions{IsoLevel: pgx.Serializable}

// Retry pacing between attempts of one transaction: a short, jittered, growing pause so that
// two transactions that keep colliding stop doing so in lockstep.
const (
	retryBasePause = time.Millisecond
	retryMaxPause  = 100 * time.Millisecond
)

// ExecuteTx runs fn in a SERIALIZABLE transaction and commits it, running the whole
// transaction again (fresh BEGIN, fresh snapshot) when it loses a serialization race (40001,
// and PostgreSQL's deadlock 40P01). fn may therefore run several times: it must have no
// effect outside the transaction (no provider call, no channel send) and must return database
// errors wrapped with %w, or the retry is lost. The number of attempts follows
// crdb.WithMaxRetries on ctx (default 50).
//
// Why not crdbpgxv5.ExecuteTx: its SAVEPOINT cockroach_restart protocol is CockroachDB-only.
// On PostgreSQL (checked against PostgreSQL 15) it ignores the error of the final COMMIT, so a
// serialization failure raised at commit is reported as success while the writes are rolled
// back; and ROLLBACK TO SAVEPOINT keeps the transaction's snapshot, so a statement-level 40001
// recurs on every retry. Restarting the whole transaction is correct on both engines; it is
// crdb.ExecuteCtx that drives the retries here.
func ExecuteTx(ctx context.Context, db *DB, fn func(tx Tx) error) error {
	return ExecuteTxOptions(ctx, db, serializable, fn)
}

// ExecuteTxOptions is ExecuteTx with explicit transaction options (for example a read-only
// transaction). Prefer ExecuteTx: weaker isolation behaves differently on the two engines.
func ExecuteTxOptions(ctx context.Context, db *DB, opts pgx.TxOptions, fn func(tx Tx) error) error {
	return retrying(ctx, func(ctx context.Context) error { return runTxOnce(ctx, db, opts, fn) })
}

// ExecuteLockedTx is ExecuteTx for a transaction of a narrow shape, the fenced write of a
// reconciler pass: every value it decides from is read from a row it locks first (the work
// item's lease, CheckLease, then the resource's row FOR UPDATE), and every other statement is a
// blind write (an increment or decrement guarded by its own WHERE, an INSERT, an INSERT ... ON
// CONFLICT, an UPDATE of a row already locked). Reads of unlocked rows may only decide what
// to queue again (waiters of a dependency), where a miss is repaired by the waiter's own
// dependency poll. On CockroachDB it is SERIALIZABLE like every other transaction. On
// PostgreSQL it is READ COMMITTED, and the rules still hold:
//
//   - the fence: the lease check's lock waits for a concurrent claim of the work item, and
//     its read then sees the row's newest version, so a takeover that committed first is seen
//     (ErrLeaseLost), and one that comes later skips the locked row until this transaction
//     has committed. The lease is held from the check to COMMIT either way, as under
//     SERIALIZABLE (CheckLease; lockorder.go says why the lock is FOR KEY SHARE);
//   - the resource's state (ready exactly once, a request's newer spec or delete kept):
//     decided from the row locked FOR UPDATE, newest version, which no one changes until
//     COMMIT;
//   - quota refunds, meters, events and queued work are single statements whose own
//     conditions PostgreSQL re-checks on the newest row version under READ COMMITTED
//     (used > 0, ended_at IS NULL, ON CONFLICT), so each happens once.
//
// Why at all: PostgreSQL's SERIALIZABLE tracks reads per index page, and a few hundred work
// items and load balancers fit on a handful of pages, so concurrent passes over different rows
// failed each other's COMMIT (bench/converge; docs/benchmarks.md, "Converge"); READ COMMITTED
// takes row locks only, which is what these writes rely on.
func ExecuteLockedTx(ctx context.Context, db *DB, fn func(tx Tx) error) error {
	return ExecuteTxOptions(ctx, db, db.lockedTxOptions(), fn)
}

// readCommitted is ExecuteLockedTx's isolation on PostgreSQL.
var readCommitted = pgx.TxOptions{IsoLevel: pgx.ReadCommitted}

// lockedTxOptions is ExecuteLockedTx's isolation on this engine.
func (db *DB) lockedTxOptions() pgx.TxOptions {
	if db.cockroach {
		return serializable
	}
	return readCommitted
}

// retrying runs once until it neither loses a serialization race nor meets a connection fault
// outside COMMIT (at most maxConnFaultRetries of those), pausing between attempts, and
// translates the final error.
func retrying(ctx context.Context, once func(ctx context.Context) error) error {
	attempt, connFaults := 0, 0
	err := crdb.ExecuteCtx(ctx, func(ctx context.Context, _ ...any) error {
		if attempt > 0 {
			if err := pauseBeforeRetry(ctx, attempt); err != nil {
				return err
			}
		}
		attempt++
		if attempt > 1 {
			txRetries.Add(1)
		}
		err := once(ctx)
		if isRetryableConnFault(err) && connFaults < maxConnFaultRetries {
			// The connection broke before COMMIT was sent (a terminated backend, a restarted
			// server, a pooled connection that died while idle): the server rolled the
			// transaction back, so running it again on a fresh connection is safe.
			connFaults++
			return retryAsSerialization{err: err}
		}
		return err
	})
	return TranslateError(err)
}

// txRetries counts the attempts after the first, process-wide: a transaction that lost a
// serialization race or met a safe-to-rerun connection fault. A rising rate is contention.
var txRetries atomic.Int64

// TransactionRetries reports how many times this process has run a transaction again.
func TransactionRetries() int64 { return txRetries.Load() }

// maxConnFaultRetries bounds the reruns after a broken connection: enough to get past the
// dead connections a pool holds after a database restart, few enough that an outage is
// answered UNAVAILABLE within a few hundred milliseconds instead of after the 50 attempts
// a serialization race gets.
const maxConnFaultRetries = 3

// isRetryableConnFault reports a connection fault that did not happen at COMMIT (those are
// commitUnknown and must not be rerun blindly).
func isRetryableConnFault(err error) bool {
	return err != nil && !errors.Is(err, errAtCommit) && isConnectionFault(err)
}

// errAtCommit marks an error returned by COMMIT itself.
var errAtCommit = errors.New("store: commit")

// retryAsSerialization presents a safe-to-rerun connection fault to crdb.ExecuteCtx, which only
// reruns 40001.
type retryAsSerialization struct{ err error }

func (e retryAsSerialization) Error() string    { return e.err.Error() }
func (e retryAsSerialization) Unwrap() error    { return e.err }
func (e retryAsSerialization) SQLState() string { return codeSerializationFailure }

// runTxOnce is one attempt: BEGIN, fn, COMMIT (or ROLLBACK when fn fails or panics).
func runTxOnce(ctx context.Context, db *DB, opts pgx.TxOptions, fn func(tx Tx) error) (err error) {
	tx, err := db.pool.BeginTx(ctx, opts)
	if err != nil {
		return fmt.Errorf("store: begin: %w", err)
	}
	defer func() {
		if p := recover(); p != nil {
			_ = tx.Rollback(context.WithoutCancel(ctx))
			panic(p)
		}
	}()
	if err := fn(tx); err != nil {
		// The rollback may fail on a broken connection; pgx then discards the connection and
		// fn's error is the one worth reporting.
		_ = tx.Rollback(context.WithoutCancel(ctx))
		return retryableDeadlock(err)
	}
	if err := tx.Commit(ctx); err != nil {
		if sqlState(err) == "" && isConnectionFault(err) {
			// COMMIT was sent (or may have been) and no answer came back: the outcome is
			// unknown to this process. Say so instead of guessing.
			return commitUnknown(fmt.Errorf("%w: %w", errAtCommit, err))
		}
		return retryableDeadlock(fmt.Errorf("%w: %w", errAtCommit, err))
	}
	return nil
}

// pauseBeforeRetry sleeps a random time up to a bound that doubles with every attempt.
func pauseBeforeRetry(ctx context.Context, attempt int) error {
	bound := retryMaxPause
	if attempt < 8 {
		bound = min(retryMaxPause, retryBasePause<<attempt)
	}
	t := time.NewTimer(rand.N(bound) + 1)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// deadlockError presents a PostgreSQL deadlock (40P01) as a serialization failure to
// crdb.ExecuteCtx, which only retries 40001: on PostgreSQL a deadlock victim is as safe to
// run again as a serialization victim. CockroachDB never reports 40P01.
type deadlockError struct{ err error }

func (e deadlockError) Error() string    { return e.err.Error() }
func (e deadlockError) Unwrap() error    { return e.err }
func (e deadlockError) SQLState() string { return codeSerializationFailure }

// retryableDeadlock wraps err in deadlockError when it is a deadlock.
func retryableDeadlock(err error) error {
	if sqlState(err) == codeDeadlockDetected {
		return deadlockError{err: err}
	}
	return err
}

// IsRetryable reports whether err is a serialization failure worth running the whole
// transaction again for.
func IsRetryable(err error) bool {
	switch sqlState(err) {
	case codeSerializationFailure, codeDeadlockDetected:
		return true
	}
	return errors.Is(err, ErrSerialization)
}
