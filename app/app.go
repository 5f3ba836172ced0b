// Package app assembles the control plane from its parts (store, authz, core, server, and the
// reconcilers) for cmd/bc-server and for tests that run the whole stack in process.
package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"time"

	"golang.org/x/net/netutil"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"better-compute.dev/compute/authz"
	"better-compute.dev/compute/core"
	"better-compute.dev/compute/core/events"
	"better-compute.dev/compute/netguard"
	"better-compute.dev/compute/observe"
	"better-compute.dev/compute/reconcile"
	"better-compute.dev/compute/seal"
	"better-compute.dev/compute/server"
	"better-compute.dev/compute/store"
)

// Config is everything a replica needs. Secrets (SealKey, OpenFGAToken) are never logged.
type Config struct {
	// Listen is the address of the one HTTP listener (h2c: Connect, gRPC, gRPC-Web, JSON).
	Listen string
	// DatabaseURL is the CockroachDB (production) or PostgreSQL URL.
	DatabaseURL string
	// SealKey is the base64 AES-256 key that seals provider tokens and keys at rest.
	SealKey string
	// CORSOrigins lists browser origins allowed; "*" any.
	CORSOrigins []string
	// BodyReadTimeout bounds the time a client has to send a request body (0: 10 s).
	BodyReadTimeout time.Duration
	// MaxConnections bounds the connections the replica holds open at once (0: 10000); more
	// wait in the listen backlog until one closes.
	MaxConnections int

	// OpenFGAURL, when set, uses an OpenFGA cluster through go-sdk; otherwise the engine runs in
	// process with OpenFGADatastore "memory" or "postgres" (on DatabaseURL, shared by replicas).
	OpenFGAURL       string
	OpenFGAStore     string
	OpenFGAToken     string
	OpenFGADatastore string

	// Reconcile runs this replica's reconcilers (every replica may; leases share the work).
	Reconcile bool
	// Replica names this replica in leases.
	Replica string
	// OutboundAllow lists prefixes tenant-named connections (BMCs) may reach although the
	// outbound policy refuses them by default (loopback, link-local, unspecified, the replica's
	// own addresses); BC_OUTBOUND_ALLOW. Dev mode allows loopback.
	OutboundAllow []netip.Prefix
	// Reconcilers tunes the reconcilers; the zero value is production's defaults.
	Reconcilers ReconcileConfig
	// WatchPoll is how often an event watch looks for new events; zero means core's default.
	WatchPoll time.Duration
	// WatchHeartbeat is how long an idle event watch waits before it sends a heartbeat
	// (BC_WATCH_HEARTBEAT); zero means core's default, 15 s.
	WatchHeartbeat time.Duration
	// DrainDelay is how long Close keeps the listener open with /readyz (and gRPC health)
	// answering not ready, so load balancers stop sending before connections close.
	DrainDelay time.Duration

	// MetricsListen, when set, serves GET /metrics on a listener of its own (BC_METRICS_LISTEN)
	// and not on the API listener, which faces tenants.
	MetricsListen string
	// Tracing exports OpenTelemetry spans over OTLP when it names an endpoint; off by default.
	Tracing observe.TracingConfig
	// TracerProvider, when set, receives the spans instead (tests use an in-memory exporter).
	TracerProvider trace.TracerProvider

	Logger *slog.Logger
}

// App is a running replica.
type App struct {
	Config Config
	DB     *store.DB
	Authz  authz.Authorizer
	// Services are core's parts (a.LoadBalancers, a.Tenancy, ...) and their base.
	server.Services
	Handler http.Handler
	// URL is http://host:port of the listener once Start returned.
	URL string

	srv    *http.Server
	health *server.Health
	// MetricsURL is http://host:port of the metrics listener when MetricsListen is set.
	MetricsURL  string
	metricsSrv  *http.Server
	stopTracing func(context.Context) error

	stopBG   context.CancelFunc
	bgDone   chan struct{}
	listener net.Listener
}

// Start migrates the database, starts authorization, builds the handler and listens.
func Start(ctx context.Context, cfg Config) (*App, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	rc, err := cfg.Reconcilers.WithDefaults()
	if err != nil {
		return nil, err
	}
	cfg.Reconcilers = rc
	key, err := seal.ParseKey(cfg.SealKey)
	if err != nil {
		return nil, fmt.Errorf("seal key: %w", err)
	}
	ring, err := seal.NewKeyring(key)
	if err != nil {
		return nil, err
	}
	tp := cfg.TracerProvider
	var stopTracing func(context.Context) error
	if tp == nil && cfg.Tracing.Enabled() {
		if cfg.Tracing.Replica == "" {
			cfg.Tracing.Replica = cfg.Replica
		}
		if tp, stopTracing, err = observe.StartTracing(ctx, cfg.Tracing); err != nil {
			return nil, err
		}
	}
	dbCtx := ctx
	if tp != nil {
		dbCtx = store.WithTracer(ctx, observe.NewDatabaseTracer(tp))
	}
	db, err := store.Open(dbCtx, cfg.DatabaseURL)
	if err != nil {
		if stopTracing != nil {
			_ = stopTracing(context.Background())
		}
		return nil, fmt.Errorf("database: %w", err)
	}
	a := &App{Config: cfg, DB: db, stopTracing: stopTracing}
	if err := db.Migrate(ctx); err != nil {
		a.Close(context.Background())
		return nil, fmt.Errorf("migrate: %w", err)
	}
	if a.Authz, err = openAuthz(ctx, cfg); err != nil {
		a.Close(context.Background())
		return nil, fmt.Errorf("authorization: %w", err)
	}
	a.Authz = server.TimedAuthorizer(a.Authz)
	base := core.NewBase(db, a.Authz, ring, cfg.Logger, netguard.Policy{Allow: cfg.OutboundAllow})
	a.Services = server.NewServices(base, metalSystems(base.Outbound), events.Options{Poll: cfg.WatchPoll, Heartbeat: cfg.WatchHeartbeat})
	a.health = server.NewHealth(db, a.Authz)
	reg := prometheus.NewRegistry()
	if a.Handler, err = server.New(server.Options{Services: a.Services, DB: db, Logger: cfg.Logger, CORSOrigins: cfg.CORSOrigins, Health: a.health,
		BodyReadTimeout: cfg.BodyReadTimeout, Registry: reg, MetricsElsewhere: cfg.MetricsListen != "", TracerProvider: tp}); err != nil {
		a.Close(context.Background())
		return nil, err
	}
	if cfg.MetricsListen != "" {
		if err := a.serveMetrics(cfg.MetricsListen, reg); err != nil {
			a.Close(context.Background())
			return nil, fmt.Errorf("metrics listener: %w", err)
		}
	}
	if a.listener, err = net.Listen("tcp", cfg.Listen); err != nil {
		a.Close(context.Background())
		return nil, err
	}
	a.URL = "http://" + a.listener.Addr().String()
	maxConns := cfg.MaxConnections
	if maxConns <= 0 {
		maxConns = DefaultMaxConnections
	}
	a.listener = netutil.LimitListener(a.listener, maxConns)
	var runner *reconcile.Runner
	if cfg.Reconcile {
		if runner, err = a.newRunner(cfg.Reconcilers); err != nil {
			a.Close(context.Background())
			return nil, fmt.Errorf("reconcilers: %w", err)
		}
	}
	protocols := new(http.Protocols)
	protocols.SetHTTP1(true)
	protocols.SetUnencryptedHTTP2(true)
	a.srv = &http.Server{
		Handler:           a.Handler,
		Protocols:         protocols,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    1 << 20,
		// HTTP/2 connections silent for 30 s are pinged and closed when the peer does not answer
		// within 15 s: a vanished client does not hold a connection slot, and long watches stay
		// alive through proxies that cut silent connections.
		HTTP2: &http.HTTP2Config{SendPingTimeout: 30 * time.Second, PingTimeout: 15 * time.Second},
	}
	go func() {
		if err := a.srv.Serve(a.listener); err != nil && !errors.Is(err, http.ErrServerClosed) {
			cfg.Logger.Error("serve", "err", err.Error())
		}
	}()
	bg, stop := context.WithCancel(context.Background())
	a.stopBG, a.bgDone = stop, make(chan struct{})
	go func() {
		defer close(a.bgDone)
		if runner != nil {
			a.runReconcilers(bg, runner)
		}
	}()
	return a, nil
}

func openAuthz(ctx context.Context, cfg Config) (authz.Authorizer, error) {
	if cfg.OpenFGAURL != "" {
		return authz.NewRemote(ctx, authz.RemoteOptions{APIURL: cfg.OpenFGAURL, StoreName: cfg.OpenFGAStore, Token: cfg.OpenFGAToken})
	}
	opts := authz.EmbeddedOptions{Datastore: cfg.OpenFGADatastore, StoreName: cfg.OpenFGAStore}
	if opts.Datastore == authz.DatastorePostgres {
		opts.DatabaseURL = cfg.DatabaseURL
	}
	return authz.NewEmbedded(ctx, opts)
}

// Close drains (readiness reports not ready for DrainDelay while the listener still serves),
// stops serving (graceful: in-flight calls finish), then the reconcilers, then the parts.
func (a *App) Close(ctx context.Context) {
	if a.health != nil {
		a.health.Drain()
	}
	if a.srv != nil && a.Config.DrainDelay > 0 {
		t := time.NewTimer(a.Config.DrainDelay)
		select {
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
	}
	if a.srv != nil {
		_ = a.srv.Shutdown(ctx)
	}
	if a.metricsSrv != nil {
		_ = a.metricsSrv.Shutdown(ctx)
	}
	if a.stopBG != nil {
		a.stopBG()
		<-a.bgDone
	}
	if a.Authz != nil {
		_ = a.Authz.Close()
	}
	if a.DB != nil {
		a.DB.Close()
	}
	if a.stopTracing != nil {
		_ = a.stopTracing(ctx)
	}
}

// serveMetrics serves reg on a listener of its own (plain HTTP/1.1, GET /metrics only).
func (a *App) serveMetrics(addr string, reg *prometheus.Registry) error {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	a.MetricsURL = "http://" + l.Addr().String()
	a.metricsSrv = &http.Server{Handler: server.MetricsHandler(reg), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	go func() {
		if err := a.metricsSrv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			a.Config.Logger.Error("serve metrics", "err", err.Error())
		}
	}()
	return nil
}

// DefaultMaxConnections is the connection bound of a replica when Config.MaxConnections is 0.
const DefaultMaxConnections = 10000
