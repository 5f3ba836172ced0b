package store

import (
	"context"
	"io/fs"
)

// MigrateFS lets the external tests run the migration machinery on their own files.
func (db *DB) MigrateFS(ctx context.Context, fsys fs.FS) error { return db.migrateFS(ctx, fsys) }

// ForEngine exposes forEngine to the external tests.
func ForEngine(sql string, cockroach bool) string { return forEngine(sql, cockroach) }
