package store

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/multitracer"
	"github.com/jackc/pgx/v5/pgxpool"
)

// DB is the control plane's handle on its database: a pgx pool plus the operations of this
// package. It is safe for concurrent use.
type DB struct {
	pool *pgxpool.Pool
	// cockroach: the server is CockroachDB (read once at open); the few statements that only
	// one engine runs choose by it.
	cockroach bool
}

// Pool settings applied when the connection string does not set them itself.
const (
	minPoolConns        = 8
	poolConnsPerCPU     = 4
	poolConnLifetime    = 30 * time.Minute
	poolLifetimeJitter  = 5 * time.Minute
	poolConnIdleTime    = 5 * time.Minute
	poolHealthCheck     = 30 * time.Second
	defaultApplication  = "better-compute"
	connectPingDeadline = 10 * time.Second
)

// Open connects to the database at url (a postgres:// URL or key=value DSN; pool_* parameters
// override the defaults) and checks that it answers.
func Open(ctx context.Context, url string) (*DB, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		// The parse error can quote the connection string, password included: do not wrap it.
		return nil, fmt.Errorf("store: invalid database url")
	}
	applyPoolDefaults(cfg, url)
	switch ts, _ := ctx.Value(tracerKey{}).([]Tracer); len(ts) {
	case 0:
	case 1:
		cfg.ConnConfig.Tracer = driverTracer{ts[0]}
	default:
		all := make([]pgx.QueryTracer, len(ts))
		for i, t := range ts {
			all[i] = driverTracer{t}
		}
		cfg.ConnConfig.Tracer = multitracer.New(all...)
	}
	return OpenConfig(ctx, cfg)
}

type tracerKey struct{}

type housekeepingKey struct{}

// Housekeeping marks ctx as a replica's own periodic read, made once per replica and interval
// rather than by a call (the credential version the principal cache watches): tests that count a
// call's round trips leave such reads out (storetest.RoundTrips).
func Housekeeping(ctx context.Context) context.Context {
	return context.WithValue(ctx, housekeepingKey{}, true)
}

// IsHousekeeping reports whether ctx was marked by Housekeeping.
func IsHousekeeping(ctx context.Context) bool {
	v, _ := ctx.Value(housekeepingKey{}).(bool)
	return v
}

// WithTracer returns ctx making Open install t on every connection of the pool it opens, after
// any tracer ctx already carries: tests count a call's round trips through a whole replica, and
// app.Start adds the OpenTelemetry tracer (app.Start opens the pool from its configuration, so
// there is no other place to hand a tracer in).
func WithTracer(ctx context.Context, t Tracer) context.Context {
	prev, _ := ctx.Value(tracerKey{}).([]Tracer)
	return context.WithValue(ctx, tracerKey{}, append(slices.Clip(prev), t))
}

// OpenConfig connects with a prepared pool configuration (tests use it to pin search_path)
// and checks that the database answers.
func OpenConfig(ctx context.Context, cfg *pgxpool.Config) (*DB, error) {
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("store: open pool: %w", err)
	}
	pingCtx, cancel := context.WithTimeout(ctx, connectPingDeadline)
	defer cancel()
	if err := pool.Ping(pingCtx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("store: ping database: %w", err)
	}
	var version string
	if err := pool.QueryRow(pingCtx, `SELECT version()`).Scan(&version); err != nil {
		pool.Close()
		return nil, fmt.Errorf("store: read server version: %w", err)
	}
	return &DB{pool: pool, cockroach: strings.Contains(version, "CockroachDB")}, nil
}

// applyPoolDefaults sizes the pool for a server replica unless the connection string chose.
// Connections are recycled every ~30 minutes (with jitter) so that, on CockroachDB, load
// spreads again over nodes that restarted or joined.
func applyPoolDefaults(cfg *pgxpool.Config, connString string) {
	set := func(key string) bool { return strings.Contains(connString, key) }
	if !set("pool_max_conns") {
		cfg.MaxConns = int32(max(minPoolConns, poolConnsPerCPU*runtime.NumCPU()))
	}
	if !set("pool_max_conn_lifetime") {
		cfg.MaxConnLifetime = poolConnLifetime
	}
	if !set("pool_max_conn_lifetime_jitter") {
		cfg.MaxConnLifetimeJitter = poolLifetimeJitter
	}
	if !set("pool_max_conn_idle_time") {
		cfg.MaxConnIdleTime = poolConnIdleTime
	}
	if !set("pool_health_check_period") {
		cfg.HealthCheckPeriod = poolHealthCheck
	}
	if cfg.ConnConfig.RuntimeParams["application_name"] == "" {
		cfg.ConnConfig.RuntimeParams["application_name"] = defaultApplication
	}
}

// Pool returns the underlying pgx pool, for queries of the domain files of this package.
func (db *DB) Pool() *pgxpool.Pool { return db.pool }

// Ping checks that the database answers (readiness probes).
func (db *DB) Ping(ctx context.Context) error {
	if err := db.pool.Ping(ctx); err != nil {
		return fmt.Errorf("store: ping: %w", err)
	}
	return nil
}

// Close closes every connection of the pool; it waits for connections in use to be returned.
func (db *DB) Close() { db.pool.Close() }
