package store

import (
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// ReadInt lets the external tests queue a one-integer read on Reads.
func (r *Reads) ReadInt(out *int, found *error, sql string, args ...any) {
	readOne(r, func(row pgx.Row) (int, error) {
		var v int
		err := row.Scan(&v)
		return v, err
	}, out, found, sql, args...)
}

// ReadAffected lets the external tests queue a write among the reads.
func (r *Reads) ReadAffected(n *int64, sql string, args ...any) { readAffected(r, n, sql, args...) }

// Exec lets the external tests queue a plain write.
func (w *Writes) Exec(what, sql string, args ...any) { w.add(what, nil, sql, args...) }

// ExecChecked queues a write whose answer is judged by the client.
func (w *Writes) ExecChecked(what, sql string, args ...any) {
	w.add(what, func(pgconn.CommandTag) error { return nil }, sql, args...)
}
