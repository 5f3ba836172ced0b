package authz

import (
	"context"
	"fmt"
	"net/url"
	"regexp"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/openfga/openfga/pkg/storage"
	"github.com/openfga/openfga/pkg/storage/migrate"
	"github.com/openfga/openfga/pkg/storage/postgres"
	"github.com/openfga/openfga/pkg/storage/sqlcommon"
)

// schemaPattern keeps the schema name a plain identifier, safe to quote.
var schemaPattern = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// migrateMu serialises OpenFGA's migrations within this process: they run on
// goose, which keeps its settings in package globals.
var migrateMu sync.Mutex

// lockName names the advisory lock replicas hold while they migrate a schema
// and resolve the store and model, so that they do not race each other.
func lockName(schema string) string { return "better-compute.authz:" + schema }

// lockSchema takes the schema's bootstrap lock by polling pg_try_advisory_lock
// rather than blocking in pg_advisory_lock: OpenFGA's migrations build an index
// CONCURRENTLY, which waits for every open statement of the database, including
// a replica blocked on the lock; a blocked waiter would deadlock against the
// holder's migration.
func lockSchema(ctx context.Context, conn *pgx.Conn, schema string) error {
	for {
		var got bool
		if err := conn.QueryRow(ctx, "SELECT pg_try_advisory_lock(hashtext($1))", lockName(schema)).Scan(&got); err != nil {
			return fmt.Errorf("%w: take bootstrap lock: %w", ErrUnavailable, err)
		}
		if got {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: wait for bootstrap lock: %w", ErrUnavailable, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// openPostgres creates and migrates the schema, then opens OpenFGA's postgres
// datastore on it. It returns holding the bootstrap advisory lock; the caller
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

	conn, err := pgx.Connect(ctx, databaseURL)
	if err != nil {
		// The URL may hold a password: never echo it.
		return nil, nil, fmt.Errorf("%w: connect to database: %w", ErrUnavailable, err)
	}
	unlock = func() error {
		uctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, uerr := conn.Exec(uctx, "SELECT pg_advisory_unlock(hashtext($1))", lockName(schema))
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
	if err = lockSchema(ctx, conn, schema); err != nil {
		return nil, nil, err
	}
	if _, err = conn.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+pgx.Identifier{schema}.Sanitize()); err != nil {
		return nil, nil, fmt.Errorf("%w: create schema %s: %w", ErrUnavailable, schema, err)
	}

	migrateMu.Lock()
	err = migrate.RunMigrations(migrate.MigrationConfig{
		Engine:      DatastorePostgres,
		URI:         scopedURL,
		Timeout:     10 * time.Second,
		PingTimeout: 5 * time.Second,
	})
	migrateMu.Unlock()
	if err != nil {
		return nil, nil, fmt.Errorf("%w: migrate schema %s: %w", ErrUnavailable, schema, err)
	}

	poolCfg, err := pgxpool.ParseConfig(scopedURL)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: parse database URL", ErrInvalid)
	}
	poolCfg.MaxConns = postgresPoolSize
	pool, err := pgxpool.NewWithConfig(ctx, poolCfg)
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
