package store

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Querier is what the domain queries run on: a transaction from ExecuteTx, or the pool for a
// single read. Both Tx and *pgxpool.Pool satisfy it.
type Querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Tx is the open transaction ExecuteTx and ExecuteLockedTx hand their function: a Querier that
// can also send a batch (Writes.Send). Its end (COMMIT or ROLLBACK) belongs to the function that
// opened it, so it cannot be committed or rolled back here.
type Tx interface {
	Querier
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// Q returns the pool as a Querier for reads outside a transaction.
func (db *DB) Q() Querier { return db.pool }

// exec runs a statement and translates its error.
func exec(ctx context.Context, q Querier, sql string, args ...any) (int64, error) {
	tag, err := q.Exec(ctx, sql, args...)
	if err != nil {
		return 0, TranslateError(err)
	}
	return tag.RowsAffected(), nil
}

// collect runs a query and scans every row with scan.
func collect[T any](ctx context.Context, q Querier, scan func(pgx.Row) (T, error), sql string, args ...any) ([]T, error) {
	rows, err := q.Query(ctx, sql, args...)
	if err != nil {
		return nil, TranslateError(err)
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, TranslateError(err)
		}
		out = append(out, v)
	}
	return out, TranslateError(rows.Err())
}

// one runs a query expected to return one row; no row is ErrNotFound.
func one[T any](ctx context.Context, q Querier, scan func(pgx.Row) (T, error), sql string, args ...any) (T, error) {
	v, err := scan(q.QueryRow(ctx, sql, args...))
	return v, TranslateError(err)
}

// OwnerOf returns the tenant_id of the row id of table, or ErrNotFound. The caller names the
// table (core's tableOf is the one list of the tables whose rows carry a tenant); the name is
// quoted as an identifier, so it can only ever name a table.
func OwnerOf(ctx context.Context, q Querier, table, id string) (string, error) {
	var tenant string
	err := q.QueryRow(ctx, `SELECT tenant_id FROM `+pgx.Identifier{table}.Sanitize()+` WHERE id = $1`, id).Scan(&tenant)
	return tenant, TranslateError(err)
}
