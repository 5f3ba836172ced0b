package store_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
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
		err := store.ExecuteTx(ctx, db, func(tx store.Tx) error {
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

// TestConflictFieldByConstraint: a unique violation names the request field of the constraint it
// broke (a taken name is "name", a taken BMC address "bmc.address", a taken tenant id "tenantId"),
// and a violation on a key the server makes names none, on real rows.
func TestConflictFieldByConstraint(t *testing.T) {
	t.Parallel()
	db := storetest.New(t)
	ctx := context.Background()
	q := db.Q()
	if _, err := store.InsertTenant(ctx, q, store.Tenant{ID: "acme"}); err != nil {
		t.Fatal(err)
	}
	if _, err := store.InsertProject(ctx, q, store.Project{ID: "prj_1", TenantID: "acme", Name: "web"}); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		reason string
		write  func() error
		field  string // "" means no field: the server's own key
	}{
		{"a taken project name", func() error {
			_, err := store.InsertProject(ctx, q, store.Project{ID: "prj_2", TenantID: "acme", Name: "web"})
			return err
		}, "name"},
		{"a taken tenant id", func() error { _, err := store.InsertTenant(ctx, q, store.Tenant{ID: "acme"}); return err }, "tenantId"},
		{"a tenant id taken up to case", func() error { _, err := store.InsertTenant(ctx, q, store.Tenant{ID: "ACME"}); return err }, "tenantId"},
		{"a generated project id that collided", func() error {
			_, err := store.InsertProject(ctx, q, store.Project{ID: "prj_1", TenantID: "acme", Name: "api"})
			return err
		}, ""},
	}
	for _, tc := range cases {
		err := tc.write()
		if !errors.Is(err, store.ErrConflict) {
			t.Errorf("%s: err = %v, want ErrConflict", tc.reason, err)
			continue
		}
		field, ok := store.ConflictField(err)
		if field != tc.field || ok != (tc.field != "") {
			t.Errorf("%s (constraint %s): ConflictField = %q, %v; want %q", tc.reason, store.ConstraintName(err), field, ok, tc.field)
		}
	}
	if field, ok := store.ConflictField(&store.ConstraintError{Kind: store.ErrConflict, Constraint: store.MetalNodeBMCKey}); !ok || field != "bmc.address" {
		t.Errorf("BMC conflict: %q, %v", field, ok)
	}
	if _, ok := store.ConflictField(&store.ConstraintError{Kind: store.ErrCheck, Constraint: "projects_tenant_id_name_key"}); ok {
		t.Error("a check violation named a conflict field")
	}
}

// serverKeys are the unique constraints of the schema guarding keys the server makes; a violation
// of one is no fault of the request. Every other unique constraint must name a request field.
var serverKeys = []string{
	"certificates_pkey", "event_counters_pkey", "event_inbox_pkey", "events_id_key", "events_pkey", "instances_pkey",
	"load_balancer_certificates_pkey", "load_balancer_instance_targets_pkey", "load_balancer_lb_targets_pkey",
	"load_balancers_pkey", "metal_nodes_pkey", "networks_pkey", "platform_bootstrap_pkey", "pools_pkey", "principals_pkey",
	"projects_pkey", "provider_accounts_pkey", "provider_budgets_pkey", "provider_lists_pkey", "provider_observations_pkey",
	"quota_reservations_pkey", "quotas_pkey", "subnets_pkey", "substrate_nodes_pkey",
	"substrates_pkey", "substrates_pool_id_key", "tokens_pkey", "tokens_secret_hash_key", "usage_records_meter_resource_id_key",
	"usage_records_pkey", "work_items_pkey", "credential_changes_pkey",
}

// TestEveryUniqueConstraintClassified: each unique index of the migrated schema either names the
// request field its violation is about (store.ConflictField) or is a server key (serverKeys), so a
// migration adding one must decide which.
func TestEveryUniqueConstraintClassified(t *testing.T) {
	t.Parallel()
	db := storetest.New(t)
	rows, err := db.Pool().Query(context.Background(), `SELECT i.relname FROM pg_index x
		JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_class c ON c.oid = x.indrelid
		WHERE x.indisunique AND c.relnamespace = current_schema()::regnamespace AND c.relname NOT LIKE 'schema_migration%'`)
	if err != nil {
		t.Fatal(err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if len(names) < 20 {
		t.Fatalf("found only %d unique indexes: %v", len(names), names)
	}
	for _, name := range names {
		_, named := store.ConflictField(&store.ConstraintError{Kind: store.ErrConflict, Constraint: name})
		server := slices.Contains(serverKeys, name)
		if named == server {
			t.Errorf("unique index %s: named field %v, server key %v; exactly one must hold", name, named, server)
		}
	}
}
