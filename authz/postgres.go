package authz

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"sync"
	"time"

	"github.com/openfga/openfga/assets"
	"github.com/openfga/openfga/pkg/storage"
	"github.com/openfga/openfga/pkg/storage/postgres"
	"github.com/openfga/openfga/pkg/storage/sqlcommon"
	"github.com/pressly/goose/v3"

	"better-compute.dev/compute/store"
)

// schemaPattern keeps the schema name a plain identifier, safe to quote.
var schemaPattern = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// migrateMu serialises OpenFGA's migrations within this process: they run on
// goose, which keeps its settings in package globals.
var migrateMu sync.Mutex

// The bootstrap lock is a lease row, not an advisory lock (the project's SQL runs on CockroachDB
// too): replicas take it with one auto-committed compare-and-set and poll while another holds it.
// Nothing waits inside an open transaction, which matters here: OpenFGA's migrations build an
// index CONCURRENTLY, and that waits for every open transaction of the database, so a replica
// blocked on a row lock would deadlock against the holder's migration. The lease expires, so a
// replica that died holding it delays the others by at most bootstrapLease.
const bootstrapLease = 2 * time.Minute

// lockSchema creates the schema and its lock table if needed and takes the bootstrap lease as
// holder.
func lockSchema(ctx context.Context, conn store.Conn, schema, holder string) error {
	q := store.QuoteIdentifier(schema)
	for _, ddl := range []string{
		"CREATE SCHEMA IF NOT EXISTS " + q,
		"CREATE TABLE IF NOT EXISTS " + q + ".bc_bootstrap_lock (name TEXT PRIMARY KEY, holder TEXT NOT NULL, expires_at TIMESTAMPTZ NOT NULL)",
	} {
		if err := execDDL(ctx, conn, ddl); err != nil {
			return fmt.Errorf("%w: prepare bootstrap lock: %w", ErrUnavailable, err)
		}
	}
	take := "INSERT INTO " + q + ".bc_bootstrap_lock (name, holder, expires_at) VALUES ('bootstrap', $1, now() + $2::INTERVAL) " +
		"ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at " +
		"WHERE bc_bootstrap_lock.expires_at < now() RETURNING holder"
	for {
		var got string
		err := conn.QueryRow(ctx, take, holder, bootstrapLease.String()).Scan(&got)
		switch {
		case err == nil && got == holder:
			return nil
		case err != nil && !errors.Is(store.TranslateError(err), store.ErrNotFound):
			return fmt.Errorf("%w: take bootstrap lock: %w", ErrUnavailable, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: wait for bootstrap lock: %w", ErrUnavailable, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// execDDL runs an IF NOT EXISTS statement, retrying the catalog races two replicas running it at
// once can lose on PostgreSQL (a unique violation in the system catalogs).
func execDDL(ctx context.Context, conn store.Conn, ddl string) error {
	var err error
	for range 5 {
		if _, err = conn.Exec(ctx, ddl); err == nil {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return err
}

// openPostgres creates and migrates the schema, then opens OpenFGA's postgres
// datastore on it. It returns holding the bootstrap lease; the caller
// releases it with unlock once the store and model are resolved.
func openPostgres(ctx context.Context, databaseURL, schema string) (ds storage.OpenFGADatastore, unlock func() error, err error) {
	if databaseURL == "" {
		return nil, nil, fmt.Errorf("%w: postgres datastore needs a database URL", ErrInvalid)
	}
	if schema == "" {
		schema = DefaultSchema
	}
	if !schemaPattern.MatchString(schema) {
		return nil, nil, fmt.Errorf("%w: schema %q is not a plain identifier", ErrInvalid, schema)
	}
	scopedURL, err := withSearchPath(databaseURL, schema)
	if err != nil {
		return nil, nil, err
	}

	conn, err := store.Connect(ctx, databaseURL)
	if err != nil {
		// The URL may hold a password: never echo it.
		return nil, nil, fmt.Errorf("%w: connect to database: %w", ErrUnavailable, err)
	}
	holder := randomHolder()
	unlock = func() error {
		uctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, uerr := conn.Exec(uctx, "DELETE FROM "+store.QuoteIdentifier(schema)+".bc_bootstrap_lock WHERE name = 'bootstrap' AND holder = $1", holder)
		cerr := conn.Close(uctx)
		if uerr != nil {
			return fmt.Errorf("%w: release bootstrap lock: %w", ErrUnavailable, uerr)
		}
		return cerr
	}
	defer func() {
		if err != nil {
			_ = unlock()
		}
	}()
	if err = lockSchema(ctx, conn, schema, holder); err != nil {
		return nil, nil, err
	}

	migrateMu.Lock()
	err = migrateOpenFGA(ctx, scopedURL)
	migrateMu.Unlock()
	if err != nil {
		return nil, nil, fmt.Errorf("%w: migrate schema %s: %w", ErrUnavailable, schema, err)
	}

	pool, err := store.OpenLibraryPool(ctx, scopedURL, postgresPoolSize)
	if errors.Is(err, store.ErrInvalidURL) {
		return nil, nil, fmt.Errorf("%w: parse database URL", ErrInvalid)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("%w: open pool: %w", ErrUnavailable, err)
	}
	pds, err := postgres.NewWithDB(pool, nil, sqlcommon.NewConfig(
		sqlcommon.WithPingRetryMaxElapsedTime(5*time.Second),
	))
	if err != nil {
		pool.Close()
		return nil, nil, fmt.Errorf("%w: open datastore: %w", ErrUnavailable, err)
	}
	return pds, unlock, nil
}

// randomHolder names this bootstrap attempt in the lease row.
func randomHolder() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// withSearchPath returns the URL with search_path set to schema, so that both
// the migrations and the datastore find OpenFGA's unqualified table names there.
func withSearchPath(databaseURL, schema string) (string, error) {
	u, err := url.Parse(databaseURL)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return "", fmt.Errorf("%w: database URL must be a postgres:// URL", ErrInvalid)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// migrateOpenFGA applies OpenFGA's PostgreSQL migrations (the SQL files its assets embed) to the
// schema the URL's search_path names. It drives goose as OpenFGA's own migrate package does, but
// only for PostgreSQL: that package also links the MySQL and SQLite drivers (a pure-Go SQLite
// among them), which this service never uses and which cost every binary and test build that
// links authz their compile and link time. Callers hold migrateMu: goose keeps its settings in
// package globals.
func migrateOpenFGA(ctx context.Context, dsn string) error {
	goose.SetLogger(goose.NopLogger())
	goose.SetVerbose(false)
	// "pgx" is the database/sql driver OpenFGA's postgres package registers (pgx's stdlib).
	db, err := goose.OpenDBWithDriver("pgx", dsn)
	if err != nil {
		return fmt.Errorf("open: %w", err)
	}
	defer db.Close()
	// A database that is starting answers within a few seconds; one that does not is unavailable.
	deadline := time.Now().Add(10 * time.Second)
	for {
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err = db.PingContext(pctx)
		cancel()
		if err == nil {
			break
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("ping: %w", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	goose.SetBaseFS(assets.EmbedMigrations)
	if err := goose.UpContext(ctx, db, assets.PostgresMigrationDir); err != nil {
		return fmt.Errorf("up: %w", err)
	}
	return nil
}
