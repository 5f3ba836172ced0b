package store_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/cockroachdb/cockroach-go/v2/crdb"
	"github.com/jackc/pgx/v5/pgconn"

	"better-compute.dev/compute/store"
	"better-compute.dev/compute/store/storetest"
)

// TestExecuteTxRetriesCommitTimeSerializationFailure forces a write skew: two transactions
// each read both rows, then each writes its own row. Under SERIALIZABLE PostgreSQL lets the
// first commit and fails the second, often at COMMIT itself (the case crdbpgxv5.ExecuteTx
// reports as success). ExecuteTx must run the loser again, so the result is the serial one.
func TestExecuteTxRetriesCommitTimeSerializationFailure(t *testing.T) {
	t.Parallel()
	db := storetest.New(t)
	ctx := context.Background()
	if _, err := db.Pool().Exec(ctx, `CREATE TABLE skew (id int PRIMARY KEY, v int NOT NULL); INSERT INTO skew VALUES (1, 0), (2, 0)`); err != nil {
		t.Fatal(err)
	}
	var attempts atomic.Int32
	var bothRead sync.WaitGroup
	bothRead.Add(2)
	errs := make(chan error, 2)
	for id := 1; id <= 2; id++ {
		go func() {
			first := true
			errs <- store.ExecuteTx(ctx, db, func(tx store.Tx) error {
				attempts.Add(1)
				var sum int
				if err := tx.QueryRow(ctx, `SELECT sum(v) FROM skew`).Scan(&sum); err != nil {
					return err
				}
				if first { // only the first attempts meet, so the retry runs alone
					first = false
					bothRead.Done()
					bothRead.Wait()
				}
				_, err := tx.Exec(ctx, `UPDATE skew SET v = $2 WHERE id = $1`, id, sum+1)
				return err
			})
		}()
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatalf("ExecuteTx: %v", err)
		}
	}
	var v1, v2 int
	if err := db.Pool().QueryRow(ctx, `SELECT (SELECT v FROM skew WHERE id = 1), (SELECT v FROM skew WHERE id = 2)`).Scan(&v1, &v2); err != nil {
		t.Fatal(err)
	}
	// Serial outcomes: (1, 2) or (2, 1). A lost or skewed write gives (1, 1), (0, 1) or (1, 0).
	if v1+v2 != 3 || v1 == 0 || v2 == 0 {
		t.Errorf("rows = (%d, %d), want a serial outcome (1, 2) or (2, 1)", v1, v2)
	}
	if n := attempts.Load(); n < 3 {
		t.Errorf("attempts = %d, want at least 3 (one transaction retried)", n)
	}
}

// TestExecuteTxRetriesStatementSerializationFailure: the row read is updated by another
// transaction before this one writes it; the UPDATE fails with 40001 and only a fresh
// transaction (new snapshot) can succeed.
func TestExecuteTxRetriesStatementSerializationFailure(t *testing.T) {
	t.Parallel()
	db := storetest.New(t)
	ctx := context.Background()
	if _, err := db.Pool().Exec(ctx, `CREATE TABLE counter (id int PRIMARY KEY, v int NOT NULL); INSERT INTO counter VALUES (1, 0)`); err != nil {
		t.Fatal(err)
	}
	attempts := 0
	err := store.ExecuteTx(ctx, db, func(tx store.Tx) error {
		attempts++
		var v int
		if err := tx.QueryRow(ctx, `SELECT v FROM counter WHERE id = 1`).Scan(&v); err != nil {
			return err
		}
		if attempts == 1 {
			if _, err := db.Pool().Exec(ctx, `UPDATE counter SET v = 100 WHERE id = 1`); err != nil {
				return err
			}
		}
		_, err := tx.Exec(ctx, `UPDATE counter SET v = $1 WHERE id = 1`, v+1)
		return err
	})
	if err != nil {
		t.Fatalf("ExecuteTx: %v", err)
	}
	var v int
	if err := db.Pool().QueryRow(ctx, `SELECT v FROM counter WHERE id = 1`).Scan(&v); err != nil {
		t.Fatal(err)
	}
	if v != 101 || attempts != 2 {
		t.Errorf("v = %d after %d attempts, want 101 after 2", v, attempts)
	}
}

func TestExecuteTxFailures(t *testing.T) {
	t.Parallel()
	db := storetest.New(t)
	ctx := context.Background()
	if _, err := db.Pool().Exec(ctx, `CREATE TABLE notes (id int PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	errBoom := errors.New("boom")
	cases := []struct {
		reason       string
		ctx          context.Context
		fnErr        error
		wantErr      error
		wantAttempts int
	}{
		{reason: "an application error is returned at once and rolls back", ctx: ctx, fnErr: errBoom, wantErr: errBoom, wantAttempts: 1},
		{reason: "a persistent serialization failure stops after the retry budget", ctx: crdb.WithMaxRetries(ctx, 3),
			fnErr: &pgconn.PgError{Code: "40001"}, wantErr: store.ErrSerialization, wantAttempts: 4},
		{reason: "a deadlock is retried like a serialization failure", ctx: crdb.WithMaxRetries(ctx, 2),
			fnErr: &pgconn.PgError{Code: "40P01"}, wantErr: store.ErrSerialization, wantAttempts: 3},
		{reason: "exhausted retries are a database that cannot serve now (UNAVAILABLE), not INTERNAL", ctx: crdb.WithMaxRetries(ctx, 2),
			fnErr: &pgconn.PgError{Code: "40001"}, wantErr: store.ErrUnavailable, wantAttempts: 3},
		{reason: "a terminated backend before COMMIT is rerun a bounded number of times, then unavailable", ctx: ctx,
			fnErr: &pgconn.PgError{Code: "57P01"}, wantErr: store.ErrUnavailable, wantAttempts: 4},
		{reason: "a broken connection before COMMIT is rerun, then unavailable", ctx: ctx,
			fnErr: fmt.Errorf("read: %w", io.ErrUnexpectedEOF), wantErr: store.ErrUnavailable, wantAttempts: 4},
	}
	for i, tc := range cases {
		attempts := 0
		err := store.ExecuteTx(tc.ctx, db, func(tx store.Tx) error {
			attempts++
			if _, err := tx.Exec(ctx, `INSERT INTO notes VALUES ($1)`, i); err != nil {
				return err
			}
			return tc.fnErr
		})
		if !errors.Is(err, tc.wantErr) {
			t.Errorf("%s: err = %v, want %v", tc.reason, err, tc.wantErr)
		}
		if attempts != tc.wantAttempts {
			t.Errorf("%s: attempts = %d, want %d", tc.reason, attempts, tc.wantAttempts)
		}
	}
	var n int
	if err := db.Pool().QueryRow(ctx, `SELECT count(*) FROM notes`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("%d rows committed by failed transactions, want 0", n)
	}
}

func TestExecuteTxPanicRollsBack(t *testing.T) {
	t.Parallel()
	db := storetest.New(t)
	ctx := context.Background()
	if _, err := db.Pool().Exec(ctx, `CREATE TABLE notes (id int PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("panic was swallowed")
			}
		}()
		_ = store.ExecuteTx(ctx, db, func(tx store.Tx) error {
			if _, err := tx.Exec(ctx, `INSERT INTO notes VALUES (1)`); err != nil {
				return err
			}
			panic("handler bug")
		})
	}()
	var n int
	if err := db.Pool().QueryRow(ctx, `SELECT count(*) FROM notes`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("%d rows committed by a panicking transaction, want 0", n)
	}
}
