// Package storetest gives tests a real database: a fresh, migrated schema per test on the
// PostgreSQL (or CockroachDB) server named by BC_TEST_DATABASE_URL, dropped when the test ends.
//
// When the server cannot be reached the test is skipped with a message saying so, unless the
// environment variable CI is set: in CI an unreachable database fails the test.
package storetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"better-compute.dev/compute/store"
)

// EnvURL names the environment variable holding the test server's URL.
const EnvURL = "BC_TEST_DATABASE_URL"

// DefaultURL is used when EnvURL is unset: the local PostgreSQL of the development setup.
const DefaultURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

// maxConns keeps each test's pool small: many tests (and packages) share one server.
const maxConns = 6

// setupTimeout bounds schema creation, migration and cleanup.
const setupTimeout = 2 * time.Minute

// Schema is a fresh schema of the test server, dropped at the end of the test.
type Schema struct {
	// Name is the schema's name (t_<random hex>).
	Name string
	// URL reaches the server with search_path set to the schema, for a separately started
	// process (a bc-server replica under test).
	URL string
	// DB is a pool whose connections use the schema.
	DB *store.DB
}

// options of NewSchema.
type options struct {
	migrate bool
}

// Option changes what NewSchema prepares.
type Option func(*options)

// Unmigrated leaves the schema empty (tests of the migrations themselves).
func Unmigrated() Option { return func(o *options) { o.migrate = false } }

// New returns a pool on a fresh schema with every migration applied.
func New(t testing.TB) *store.DB {
	t.Helper()
	return NewSchema(t).DB
}

// NewSchema creates a fresh schema, opens a pool on it and (unless Unmigrated) migrates it.
// The pool is closed and the schema dropped in t.Cleanup.
func NewSchema(t testing.TB, opts ...Option) *Schema {
	t.Helper()
	o := options{migrate: true}
	for _, opt := range opts {
		opt(&o)
	}
	base := BaseURL()
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()

	admin := connectAdmin(ctx, t, base)
	name := "t_" + randomHex(t, 8)
	_, err := admin.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{name}.Sanitize())
	_ = admin.Close(ctx)
	if err != nil {
		t.Fatalf("storetest: create schema %s: %v", name, err)
	}
	t.Cleanup(func() { dropSchema(t, base, name) })

	db, err := OpenSchema(ctx, name)
	if err != nil {
		t.Fatalf("storetest: open schema %s: %v", name, err)
	}
	t.Cleanup(db.Close) // registered after the drop, so it runs before it
	if o.migrate {
		if err := db.Migrate(ctx); err != nil {
			t.Fatalf("storetest: migrate schema %s: %v", name, err)
		}
	}
	return &Schema{Name: name, URL: URL(t, name), DB: db}
}

// OpenSchema opens another pool on an existing schema (a second replica in a test). The
// caller closes it.
func OpenSchema(ctx context.Context, schema string) (*store.DB, error) {
	cfg, err := pgxpool.ParseConfig(BaseURL())
	if err != nil {
		return nil, fmt.Errorf("storetest: invalid %s", EnvURL)
	}
	cfg.MaxConns = maxConns
	cfg.ConnConfig.RuntimeParams["search_path"] = schema
	cfg.ConnConfig.RuntimeParams["application_name"] = "storetest"
	cfg.AfterConnect = relaxDurability
	return store.OpenConfig(ctx, cfg)
}

// relaxDurability turns off waiting for the WAL flush at commit on test connections: a test
// database need not survive a crash, and the flush (milliseconds on a plain disk) otherwise
// dominates every test's run time. Visibility and isolation are unchanged. A server without
// the setting (CockroachDB) refuses it, which is ignored.
func relaxDurability(ctx context.Context, conn *pgx.Conn) error {
	_, _ = conn.Exec(ctx, "SET synchronous_commit = off")
	return nil
}

// URL returns the test server's URL with search_path set to schema through the startup
// options parameter (options=-csearch_path%3D<schema>), which PostgreSQL and CockroachDB
// both honour and every libpq-style client passes on.
func URL(t testing.TB, schema string) string {
	t.Helper()
	u, err := url.Parse(BaseURL())
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		t.Fatalf("storetest: %s must be a postgres:// URL to derive a schema URL", EnvURL)
	}
	q := u.Query()
	opt := "-csearch_path=" + schema
	if prev := q.Get("options"); prev != "" {
		opt = prev + " " + opt
	}
	q.Set("options", opt)
	u.RawQuery = q.Encode()
	return u.String()
}

// BaseURL returns the test server's URL: BC_TEST_DATABASE_URL, or DefaultURL.
func BaseURL() string {
	if u := os.Getenv(EnvURL); u != "" {
		return u
	}
	return DefaultURL
}

// connectAdmin opens a plain connection, skipping (or, in CI, failing) the test when the
// server is unreachable.
func connectAdmin(ctx context.Context, t testing.TB, base string) *pgx.Conn {
	t.Helper()
	dialCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(dialCtx, base)
	if err == nil {
		return conn
	}
	msg := fmt.Sprintf("storetest: test database %s unreachable (set %s): %v", redact(base), EnvURL, err)
	if os.Getenv("CI") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg + " (skipping; with CI set this fails)")
	return nil
}

// dropSchema removes a test's schema and everything in it.
func dropSchema(t testing.TB, base, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Errorf("storetest: drop schema %s: connect: %v", name, err)
		return
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{name}.Sanitize()+" CASCADE"); err != nil {
		t.Errorf("storetest: drop schema %s: %v", name, err)
	}
}

// randomHex returns 2n random lowercase hex characters.
func randomHex(t testing.TB, n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatalf("storetest: random: %v", err)
	}
	return hex.EncodeToString(b)
}

// redact hides a password in a URL before it goes into a message.
func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" {
		if strings.Contains(raw, "password") {
			return "(connection string with a password)"
		}
		return raw
	}
	return u.Redacted()
}
