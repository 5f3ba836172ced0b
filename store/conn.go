package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Conn is one database connection outside any pool, for work that comes before a pool or must
// not share one: making or dropping a schema, or holding a bootstrap lease while another
// library migrates its own tables (authz).
type Conn interface {
	Querier
	Close(ctx context.Context) error
}

// Connect opens a Conn to the database at url.
func Connect(ctx context.Context, url string) (Conn, error) {
	return pgx.Connect(ctx, url)
}

// QuoteIdentifier quotes name as one SQL identifier (a schema or table name built into a
// statement), so that it can only ever name one.
func QuoteIdentifier(name string) string { return pgx.Identifier{name}.Sanitize() }

// ErrInvalidURL is a connection string the driver cannot parse. Its text never quotes the
// string, which may hold a password.
var ErrInvalidURL = errors.New("store: invalid database url")

// OpenLibraryPool opens a pool of at most maxConns connections to url for a library that runs
// its own statements on the driver's pool type (OpenFGA's postgres datastore), so that the
// driver is named here only. The caller closes it.
func OpenLibraryPool(ctx context.Context, url string, maxConns int32) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, ErrInvalidURL
	}
	cfg.MaxConns = maxConns
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("store: open pool: %w", err)
	}
	return pool, nil
}
