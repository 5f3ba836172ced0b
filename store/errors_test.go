package store_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
	"testing"

	"github.com/cockroachdb/cockroach-go/v2/crdb"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"better-compute.dev/compute/store"
	"better-compute.dev/compute/store/storetest"
)

func TestTranslateError(t *testing.T) {
	t.Parallel()
	unique := &pgconn.PgError{Code: "23505", ConstraintName: "things_name_key", TableName: "things",
		Detail: "Key (name)=(s3cr3t) already exists."}
	cases := []struct {
		reason     string
		in         error
		want       error // errors.Is target; nil means "passes through unchanged"
		constraint string
	}{
		{reason: "nil stays nil", in: nil},
		{reason: "no rows is not found", in: pgx.ErrNoRows, want: store.ErrNotFound},
		{reason: "wrapped no rows is not found", in: fmt.Errorf("get: %w", pgx.ErrNoRows), want: store.ErrNotFound},
		{reason: "unique violation is a conflict naming the constraint", in: unique, want: store.ErrConflict, constraint: "things_name_key"},
		{reason: "foreign key violation", in: &pgconn.PgError{Code: "23503", ConstraintName: "fk"}, want: store.ErrForeignKey, constraint: "fk"},
		{reason: "check violation", in: &pgconn.PgError{Code: "23514", ConstraintName: "ck"}, want: store.ErrCheck, constraint: "ck"},
		{reason: "not null violation is a check violation", in: &pgconn.PgError{Code: "23502"}, want: store.ErrCheck},
		{reason: "serialization failure", in: &pgconn.PgError{Code: "40001"}, want: store.ErrSerialization},
		{reason: "deadlock counts as serialization failure", in: &pgconn.PgError{Code: "40P01"}, want: store.ErrSerialization},
		{reason: "other driver errors pass through", in: &pgconn.PgError{Code: "42601"}},
		{reason: "context errors pass through", in: context.Canceled},
		{reason: "admin shutdown (pg_terminate_backend) is unavailable", in: &pgconn.PgError{Code: "57P01"}, want: store.ErrUnavailable},
		{reason: "a server starting up is unavailable", in: &pgconn.PgError{Code: "57P03"}, want: store.ErrUnavailable},
		{reason: "too many connections is unavailable", in: &pgconn.PgError{Code: "53300"}, want: store.ErrUnavailable},
		{reason: "a connection exception class is unavailable", in: &pgconn.PgError{Code: "08006"}, want: store.ErrUnavailable},
		{reason: "a connection lost under a statement is unavailable", in: fmt.Errorf("read: %w", io.ErrUnexpectedEOF), want: store.ErrUnavailable},
		{reason: "a refused connection is unavailable", in: &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}, want: store.ErrUnavailable},
		{reason: "a closed connection is unavailable", in: fmt.Errorf("query: %w", pgconn.ErrConnClosed), want: store.ErrUnavailable},
		{reason: "a pool that could not hand out a connection in time is unavailable", in: fmt.Errorf("acquire: %w", context.DeadlineExceeded), want: store.ErrUnavailable},
		{reason: "exhausted serialization retries are unavailable", in: crdbMaxRetries(), want: store.ErrUnavailable},
		{reason: "CockroachDB's ambiguous result is a commit of unknown outcome", in: &pgconn.PgError{Code: "40003"}, want: store.ErrCommitUnknown},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			t.Parallel()
			got := store.TranslateError(tc.in)
			if tc.want == nil {
				if got != tc.in {
					t.Fatalf("TranslateError(%v) = %v, want it unchanged", tc.in, got)
				}
				return
			}
			if !errors.Is(got, tc.want) {
				t.Fatalf("TranslateError(%v) = %v, want errors.Is %v", tc.in, got, tc.want)
			}
			if c := store.ConstraintName(got); c != tc.constraint {
				t.Errorf("ConstraintName = %q, want %q", c, tc.constraint)
			}
			if again := store.TranslateError(got); again != got {
				t.Errorf("translating twice changed the error: %v -> %v", got, again)
			}
		})
	}
}

func TestTranslateErrorKeepsSQLStateAndHidesDetail(t *testing.T) {
	t.Parallel()
	ser := store.TranslateError(&pgconn.PgError{Code: "40001", Message: "could not serialize"})
	if !store.IsRetryable(ser) {
		t.Errorf("translated serialization failure %v is not retryable", ser)
	}
	var pgErr *pgconn.PgError
	if !errors.As(ser, &pgErr) || pgErr.Code != "40001" {
		t.Errorf("translated serialization failure lost its SQLSTATE: %v", ser)
	}
	dup := store.TranslateError(&pgconn.PgError{Code: "23505", Message: "duplicate key", Detail: "Key (token)=(s3cr3t) already exists."})
	if strings.Contains(dup.Error(), "s3cr3t") {
		t.Errorf("conflict message %q quotes the row's values", dup.Error())
	}
}

func TestTranslateErrorOnRealViolations(t *testing.T) {
	t.Parallel()
	db := storetest.New(t)
	ctx := context.Background()
	if _, err := db.Pool().Exec(ctx, `CREATE TABLE parents (id int PRIMARY KEY, name text NOT NULL CONSTRAINT parents_name_key UNIQUE);
		CREATE TABLE children (id int PRIMARY KEY, parent_id int NOT NULL CONSTRAINT children_parent_fk REFERENCES parents (id));
		INSERT INTO parents VALUES (1, 'one')`); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		reason     string
		sql        string
		want       error
		constraint string
	}{
		{reason: "duplicate unique column", sql: `INSERT INTO parents VALUES (2, 'one')`, want: store.ErrConflict, constraint: "parents_name_key"},
		{reason: "duplicate primary key", sql: `INSERT INTO parents VALUES (1, 'two')`, want: store.ErrConflict, constraint: "parents_pkey"},
		{reason: "missing parent", sql: `INSERT INTO children VALUES (1, 42)`, want: store.ErrForeignKey, constraint: "children_parent_fk"},
		{reason: "null in a not null column", sql: `INSERT INTO parents VALUES (3, NULL)`, want: store.ErrCheck},
	}
	for _, tc := range cases {
		err := store.ExecuteTx(ctx, db, func(tx pgx.Tx) error {
			_, err := tx.Exec(ctx, tc.sql)
			return err
		})
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: err = %v, want %v", tc.reason, err, tc.want)
			continue
		}
		if got := store.ConstraintName(err); got != tc.constraint {
			t.Errorf("%s: constraint = %q, want %q", tc.reason, got, tc.constraint)
		}
	}
	var name string
	err := store.TranslateError(db.Pool().QueryRow(ctx, `SELECT name FROM parents WHERE id = 99`).Scan(&name))
	if !errors.Is(err, store.ErrNotFound) {
		t.Errorf("missing row: err = %v, want ErrNotFound", err)
	}
}

// crdbMaxRetries is the error crdb.ExecuteCtx returns once a transaction lost every retry.
func crdbMaxRetries() error {
	ctx := crdb.WithMaxRetries(context.Background(), 1)
	return crdb.ExecuteCtx(ctx, func(context.Context, ...any) error { return &pgconn.PgError{Code: "40001"} })
}
