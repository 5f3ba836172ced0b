package store

import "context"

// SchemaCurrent reports whether every migration embedded in this binary is recorded as applied:
// a replica whose schema lags its code must not take traffic. The error is set only when the
// database could not answer.
func (db *DB) SchemaCurrent(ctx context.Context) (bool, error) {
	want, err := EmbeddedMigrations()
	if err != nil {
		return false, err
	}
	applied, err := db.AppliedMigrations(ctx)
	if err != nil {
		return false, err
	}
	have := make(map[string]bool, len(applied))
	for _, v := range applied {
		have[v] = true
	}
	for _, v := range want {
		if !have[v] {
			return false, nil
		}
	}
	return true, nil
}
