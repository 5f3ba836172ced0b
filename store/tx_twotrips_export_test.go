package store

import (
	"context"

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

// ExecRow lets the external tests queue a write whose one-integer row is read.
func (w *Writes) ExecRow(what string, out *int, sql string, args ...any) {
	w.addRow(what, func(row pgx.Row) error { return row.Scan(out) }, sql, args...)
}

// Statements reports how many statements w's writes become once fused, and their SQL.
func (w *Writes) Statements(ctx context.Context) []string {
	var sqls []string
	for _, q := range w.fused(ctx).batch.QueuedQueries {
		sqls = append(sqls, q.SQL)
	}
	return sqls
}
