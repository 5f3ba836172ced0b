package store

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// embeddedMigrations holds the schema, one file per step, applied in file-name order.
//
//go:embed migrations/*.sql
var embeddedMigrations embed.FS

// migration is one schema step: its version is the file name without ".sql".
type migration struct {
	version string
	sql     string
}

// Statements of the migration bookkeeping. The lock table has a single row; every migration
// transaction locks and rewrites it, which serialises concurrent starters on both engines.
const (
	sqlCreateMigrationsTable = `CREATE TABLE IF NOT EXISTS schema_migrations (
	version text PRIMARY KEY,
	applied_at timestamptz NOT NULL DEFAULT now()
)`
	sqlCreateLockTable = `CREATE TABLE IF NOT EXISTS schema_migration_lock (
	id int PRIMARY KEY,
	locked_at timestamptz,
	locked_by text
)`
	sqlSeedLockRow      = `INSERT INTO schema_migration_lock (id) VALUES (1) ON CONFLICT (id) DO NOTHING`
	sqlLockMigrations   = `SELECT id FROM schema_migration_lock WHERE id = 1 FOR UPDATE`
	sqlStampLock        = `UPDATE schema_migration_lock SET locked_at = now(), locked_by = $1 WHERE id = 1`
	sqlMigrationApplied = `SELECT count(*) FROM schema_migrations WHERE version = $1`
	sqlRecordMigration  = `INSERT INTO schema_migrations (version, applied_at) VALUES ($1, now())`
	sqlListMigrations   = `SELECT version FROM schema_migrations ORDER BY version`
)

// bootstrapAttempts bounds the retries of the bookkeeping DDL: PostgreSQL reports two
// concurrent CREATE TABLE IF NOT EXISTS of one name as a unique violation on its catalog.
const bootstrapAttempts = 10

// Migrate applies every embedded migration not yet recorded in schema_migrations, in name
// order, each in its own transaction together with its record. Many replicas may call it at
// once: each migration is applied exactly once.
func (db *DB) Migrate(ctx context.Context) error {
	sub, err := fs.Sub(embeddedMigrations, "migrations")
	if err != nil {
		return fmt.Errorf("store: migrations: %w", err)
	}
	return db.migrateFS(ctx, sub)
}

// migrateFS applies the *.sql files at the root of fsys.
func (db *DB) migrateFS(ctx context.Context, fsys fs.FS) error {
	migrations, err := loadMigrations(fsys)
	if err != nil {
		return err
	}
	if err := db.bootstrapMigrations(ctx); err != nil {
		return err
	}
	applied, err := db.AppliedMigrations(ctx)
	if err != nil {
		return err
	}
	done := make(map[string]bool, len(applied))
	for _, v := range applied {
		done[v] = true
	}
	holder := migrationHolder()
	for _, m := range migrations {
		if done[m.version] {
			continue
		}
		if err := db.applyMigration(ctx, m, holder); err != nil {
			return err
		}
	}
	return nil
}

// Engine lines. Where the two engines spell one schema change differently (PostgreSQL drops a
// UNIQUE constraint with ALTER TABLE ... DROP CONSTRAINT and refuses DROP INDEX on it; CockroachDB
// only drops CHECK, FOREIGN KEY and PRIMARY KEY constraints that way and wants DROP INDEX ...
// CASCADE), a migration writes each spelling as a comment line naming its engine:
//
//	-- postgres: ALTER TABLE t DROP CONSTRAINT t_key;
//	-- cockroach: DROP INDEX t@t_key CASCADE;
//
// and forEngine uncomments the lines of the engine the store runs on. Both stay comments to any
// other reader of the file.
const (
	postgresLine  = "-- postgres: "
	cockroachLine = "-- cockroach: "
)

// forEngine returns sql with the engine lines of its engine made statements.
func forEngine(sql string, cockroach bool) string {
	mine := postgresLine
	if cockroach {
		mine = cockroachLine
	}
	lines := strings.Split(sql, "\n")
	for i, line := range lines {
		if rest, ok := strings.CutPrefix(line, mine); ok {
			lines[i] = rest
		}
	}
	return strings.Join(lines, "\n")
}

// loadMigrations reads and sorts the *.sql files at the root of fsys.
func loadMigrations(fsys fs.FS) ([]migration, error) {
	names, err := fs.Glob(fsys, "*.sql")
	if err != nil {
		return nil, fmt.Errorf("store: list migrations: %w", err)
	}
	sort.Strings(names)
	out := make([]migration, 0, len(names))
	for _, name := range names {
		body, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, fmt.Errorf("store: read migration %s: %w", name, err)
		}
		out = append(out, migration{version: strings.TrimSuffix(path.Base(name), ".sql"), sql: string(body)})
	}
	return out, nil
}

// bootstrapMigrations creates the bookkeeping tables, retrying the races of concurrent starters.
func (db *DB) bootstrapMigrations(ctx context.Context) error {
	var err error
	for attempt := range bootstrapAttempts {
		if attempt > 0 {
			if perr := pauseBeforeRetry(ctx, attempt); perr != nil {
				return perr
			}
		}
		if err = db.bootstrapOnce(ctx); err == nil || !bootstrapRace(err) {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("store: migration bookkeeping: %w", err)
	}
	return nil
}

func (db *DB) bootstrapOnce(ctx context.Context) error {
	for _, stmt := range []string{sqlCreateMigrationsTable, sqlCreateLockTable, sqlSeedLockRow} {
		if _, err := db.pool.Exec(ctx, stmt); err != nil {
			return err
		}
	}
	return nil
}

// bootstrapRace reports the errors two concurrent bootstraps give each other.
func bootstrapRace(err error) bool {
	switch sqlState(err) {
	case codeUniqueViolation, "42P07" /* duplicate_table */, "42710" /* duplicate_object: the table's row type */, codeSerializationFailure:
		return true
	}
	return false
}

// applyMigration runs one migration under the migration lock. The lock row is rewritten, not
// only locked: a concurrent SERIALIZABLE starter that waited on it then fails with 40001 and
// ExecuteTx runs it again with a fresh snapshot that sees this migration's record. (A plain
// FOR UPDATE would leave it with the snapshot from before the wait on PostgreSQL, and on
// CockroachDB the lock is best-effort anyway; the write conflict is what is guaranteed.)
// The rewrite comes after the migration's DDL because CockroachDB refuses some schema changes
// that follow a write in the same transaction.
func (db *DB) applyMigration(ctx context.Context, m migration, holder string) error {
	err := ExecuteTx(ctx, db, func(tx Tx) error {
		var id int
		if err := tx.QueryRow(ctx, sqlLockMigrations).Scan(&id); err != nil {
			return fmt.Errorf("lock: %w", err)
		}
		var n int
		if err := tx.QueryRow(ctx, sqlMigrationApplied, m.version).Scan(&n); err != nil {
			return fmt.Errorf("check: %w", err)
		}
		if n > 0 {
			return nil // another starter applied it after our first look
		}
		if _, err := tx.Exec(ctx, forEngine(m.sql, db.cockroach)); err != nil {
			return fmt.Errorf("apply: %w", err)
		}
		if _, err := tx.Exec(ctx, sqlStampLock, holder); err != nil {
			return fmt.Errorf("stamp lock: %w", err)
		}
		if _, err := tx.Exec(ctx, sqlRecordMigration, m.version); err != nil {
			return fmt.Errorf("record: %w", err)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("store: migration %s: %w", m.version, err)
	}
	return nil
}

// AppliedMigrations lists the versions recorded in schema_migrations, in order.
func (db *DB) AppliedMigrations(ctx context.Context) ([]string, error) {
	rows, err := db.pool.Query(ctx, sqlListMigrations)
	if err != nil {
		return nil, fmt.Errorf("store: list applied migrations: %w", TranslateError(err))
	}
	versions, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("store: list applied migrations: %w", TranslateError(err))
	}
	return versions, nil
}

// EmbeddedMigrations lists the versions of the migrations built into this binary, in order
// (for `bc-server migrate` to report what is pending).
func EmbeddedMigrations() ([]string, error) {
	sub, err := fs.Sub(embeddedMigrations, "migrations")
	if err != nil {
		return nil, fmt.Errorf("store: migrations: %w", err)
	}
	migrations, err := loadMigrations(sub)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(migrations))
	for i, m := range migrations {
		out[i] = m.version
	}
	return out, nil
}

// migrationHolder names this process in the lock row, for an operator wondering who migrated.
func migrationHolder() string {
	host, err := os.Hostname()
	if err != nil {
		host = "unknown"
	}
	return fmt.Sprintf("%s/%d@%s", host, os.Getpid(), time.Now().UTC().Format(time.RFC3339))
}
