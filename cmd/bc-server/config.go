package main

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"better-compute.dev/compute/app"
	"better-compute.dev/compute/authz"
	"better-compute.dev/compute/netguard"
	"better-compute.dev/compute/seal"
)

// Config is everything the BC_* environment sets, parsed and checked once at start. A value
// that does not parse stops the command with an error naming its variable; nothing below
// cmd/bc-server reads the environment.
type Config struct {
	App      app.Config
	LogLevel slog.Level
}

// envVar documents one BC_* variable; usage and the table of docs/operations.md list the same set.
type envVar struct{ name, def, meaning string }

// envVars is every variable parseConfig reads.
var envVars = []envVar{
	{"BC_DATABASE_URL", "(required)", "CockroachDB or PostgreSQL URL"},
	{"BC_SEAL_KEY", "(required)", "base64 AES-256 key sealing provider tokens and keys at rest"},
	{"BC_LISTEN", ":8080", "listen address (Connect, gRPC, gRPC-Web, JSON, health, metrics)"},
	{"BC_REPLICA", "host name", "this replica's name in leases"},
	{"BC_CORS_ORIGINS", "*", "comma-separated browser origins allowed"},
	{"BC_LOG_LEVEL", "info", "debug, info, warn or error"},
	{"BC_PUBLIC_URL", "listener URL", "http(s) base URL substrate nodes call to join"},
	{"BC_OUTBOUND_ALLOW", "(none)", "comma-separated prefixes tenant-named BMC addresses may reach although refused by default"},
	{"BC_OPENFGA_URL", "(embedded engine)", "OpenFGA cluster URL; unset runs the engine in process"},
	{"BC_OPENFGA_STORE", "(default store)", "OpenFGA store name"},
	{"BC_OPENFGA_TOKEN", "(none)", "OpenFGA API token (secret)"},
	{"BC_OPENFGA_DATASTORE", "postgres", "in-process engine datastore: postgres (on BC_DATABASE_URL) or memory"},
	{"BC_RECONCILE", "true", "run reconcilers on this replica (true or false)"},
	{"BC_DRAIN_DELAY", "5s", "after SIGTERM, how long /readyz answers 503 before the listener closes"},
	{"BC_BODY_READ_TIMEOUT", "10s", "time a client has to send a request body once its headers are in"},
	{"BC_MAX_CONNECTIONS", "10000", "connections a replica holds open at once (more wait in the listen backlog)"},
	{"BC_WATCH_POLL", "250ms", "how often the replica's shared event reader looks for new events for its watches"},
	{"BC_WATCH_HEARTBEAT", "15s", "how long an idle event watch waits before it sends a heartbeat"},
	{"BC_RECONCILE_CONCURRENCY", "4", "resources reconciled at once"},
	{"BC_LEASE_TTL", "30s", "reconcile lease lifetime without renewal"},
	{"BC_RECONCILE_POLL", "1s", "pause after a claim found nothing due"},
	{"BC_PERIODIC_INTERVAL", "1m", "period of the pass queueing every live resource (at most 5m)"},
	{"BC_RECONCILE_BACKOFF", "1s", "first retry delay after a failure"},
	{"BC_RECONCILE_BACKOFF_MAX", "5m", "longest retry delay"},
	{"BC_PROVIDER_POLL", "2s", "how soon a pass returns while the provider works"},
	{"BC_DEPENDENCY_POLL", "10s", "how soon a pass returns while a dependency is not ready"},
	{"BC_CREATE_WINDOW", "10s", "bound of one create request; kept under half the lease"},
	{"BC_METAL_POWER_SETTLE", "1m", "how long a metal workflow waits after a power change for the BMC to report it"},
	{"BC_DO_REQUESTS_PER_MINUTE", "240", "DigitalOcean requests a minute per token"},
	{"BC_DO_BURST", "10", "DigitalOcean request burst"},
	{"BC_DO_REQUEST_TIMEOUT", "30s", "DigitalOcean request timeout; kept under half the lease"},
	{"BC_EVENT_RETENTION", "720h", "how long events are kept (at least 1h)"},
	{"BC_IDEMPOTENCY_RETENTION", "24h", "how long idempotency records are kept (at least 24h; keys replay for 24h)"},
	{"BC_WORK_RETENTION", "720h", "how long finished (idle) work items are kept (at least 1h)"},
	{"BC_USAGE_RETENTION", "9600h", "how long closed usage intervals are kept after they ended (at least 768h); open ones always"},
	{"BC_METRICS_LISTEN", "(API listener)", "address serving GET /metrics on its own listener; when set, the API listener serves no /metrics"},
	{"BC_OTLP_ENDPOINT", "(tracing off)", "OTLP/gRPC collector URL for traces (http://host:4317 plain, https:// TLS)"},
	{"BC_TRACE_SAMPLE_RATIO", "1", "share of new traces kept (0 < r <= 1); calls with a sampled traceparent are always kept"},
	{"OTEL_EXPORTER_OTLP_ENDPOINT", "(none)", "standard OpenTelemetry variable: when set (and BC_OTLP_ENDPOINT is not), traces go there, configured by the OTEL_EXPORTER_OTLP_* variables"},
	{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "(none)", "as OTEL_EXPORTER_OTLP_ENDPOINT, for traces only"},
}

// defaultDrainDelay gives load balancers time to see /readyz fail before the listener closes.
const defaultDrainDelay = 5 * time.Second

// environment is the process environment as the commands read it: get returns one variable,
// names lists every variable set (so a mistyped BC_* name is refused, not silently ignored).
type environment struct {
	get   func(string) string
	names []string
}

// osEnvironment is the process's own environment.
func osEnvironment() environment {
	var names []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		names = append(names, name)
	}
	return environment{get: os.Getenv, names: names}
}

// otherToolsVars are BC_* names the project's other programs read (the test and bench harnesses,
// the TS SDK's test runner, the bcctl CLI, bcd on a substrate node): a shell set up for them may
// start bc-server too, so they are not typos. A trailing "_" is a prefix.
var otherToolsVars = []string{"BC_TEST_", "BC_BENCH_", "BC_SERVER_BIN", "BC_TOKEN", "BC_POOL_ID", "BC_NODE_NAME", "BC_JOIN_URL", "BC_JOIN_TOKEN",
	"BC_ENDPOINT", "BC_TENANT", "BC_CONFIG", "BC_PROVIDER_TOKEN"}

// unknownVars returns the BC_* names set in env that are neither an entry of envVars, another
// program's (otherToolsVars) nor a Kubernetes service link (isServiceLink), sorted.
func unknownVars(env environment) []string {
	known := func(name string) bool {
		if slices.ContainsFunc(envVars, func(v envVar) bool { return v.name == name }) {
			return true
		}
		return slices.ContainsFunc(otherToolsVars, func(o string) bool {
			return name == o || (strings.HasSuffix(o, "_") && strings.HasPrefix(name, o))
		})
	}
	var unknown []string
	for _, name := range env.names {
		if !strings.HasPrefix(name, "BC_") || slices.Contains(unknown, name) || known(name) || isServiceLink(name, env.get(name)) {
			continue
		}
		unknown = append(unknown, name)
	}
	slices.Sort(unknown)
	return unknown
}

// serviceLinks are the variables Kubernetes sets in every pod for every Service of the namespace
// (enableServiceLinks, on by default): a Service named bc or bc-metrics yields BC_SERVICE_HOST,
// BC_PORT, BC_METRICS_PORT_9090_TCP_ADDR and the like. Each shape of name comes with the form of
// value Kubernetes writes there; a name may fit more than one shape (BC_SERVICE_PORT is the port
// of Service bc or the link of Service bc-service), so every shape is tried.
var serviceLinks = []serviceLink{
	{regexp.MustCompile(`^BC(_[A-Z0-9_]+)?_SERVICE_HOST$`), isIP},
	{regexp.MustCompile(`^BC(_[A-Z0-9_]+)?_SERVICE_PORT(_[A-Z0-9_]+)?$`), isPort},
	{regexp.MustCompile(`^BC(_[A-Z0-9_]+)?_PORT(_[0-9]+_(TCP|UDP|SCTP))?$`), isProtoAddress},
	{regexp.MustCompile(`^BC(_[A-Z0-9_]+)?_PORT_[0-9]+_(TCP|UDP|SCTP)_ADDR$`), isIP},
	{regexp.MustCompile(`^BC(_[A-Z0-9_]+)?_PORT_[0-9]+_(TCP|UDP|SCTP)_PORT$`), isPort},
	{regexp.MustCompile(`^BC(_[A-Z0-9_]+)?_PORT_[0-9]+_(TCP|UDP|SCTP)_PROTO$`), isProto},
}

// isServiceLink reports whether name=value is one of Kubernetes' service-link variables: both
// the name's shape and the value's form must fit, so a mistyped knob (BC_METRICS_PORT=9090) is
// still refused while a Service named bc never stops a replica.
func isServiceLink(name, value string) bool {
	return slices.ContainsFunc(serviceLinks, func(l serviceLink) bool {
		return l.name.MatchString(name) && l.value(value)
	})
}

// serviceLink is one shape of service-link name and the form of value Kubernetes gives it.
type serviceLink struct {
	name  *regexp.Regexp
	value func(string) bool
}

func isIP(v string) bool { return net.ParseIP(v) != nil }

func isPort(v string) bool {
	n, err := strconv.Atoi(v)
	return err == nil && n > 0 && n < 65536
}

func isProto(v string) bool { return v == "tcp" || v == "udp" || v == "sctp" }

// isProtoAddress: tcp://10.96.0.12:8080 (the form of <SERVICE>_PORT and <SERVICE>_PORT_<n>_TCP).
func isProtoAddress(v string) bool {
	proto, hostPort, ok := strings.Cut(v, "://")
	if !ok || !isProto(proto) {
		return false
	}
	host, port, err := net.SplitHostPort(hostPort)
	return err == nil && isIP(host) && isPort(port)
}

// parseConfig reads every BC_* variable of env. requireServe demands the variables a replica
// cannot run without (serve); dev supplies its own database and key. A BC_* variable that is set
// but not one of envVars (a typo such as BC_LEASE_TIMEOUT) is an error naming it.
func parseConfig(env environment, requireServe bool) (Config, error) {
	getenv := env.get
	var errs []error
	if unknown := unknownVars(env); len(unknown) > 0 {
		errs = append(errs, fmt.Errorf("%s: not a bc-server variable (see bc-server help for the list)", strings.Join(unknown, ", ")))
	}
	bad := func(name, v, want string) { errs = append(errs, fmt.Errorf("%s=%q: %s", name, v, want)) }
	get := func(name, def string) string {
		if v := strings.TrimSpace(getenv(name)); v != "" {
			return v
		}
		return def
	}
	dur := func(name string, into *time.Duration, allowZero bool) {
		v := get(name, "")
		if v == "" {
			return
		}
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 || (d == 0 && !allowZero) {
			bad(name, v, "not a positive duration (e.g. 30s)")
			return
		}
		*into = d
	}
	num := func(name string, into *int) {
		v := get(name, "")
		if v == "" {
			return
		}
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			bad(name, v, "not a positive number")
			return
		}
		*into = n
	}

	var c Config
	a := &c.App
	a.DatabaseURL = get("BC_DATABASE_URL", "")
	if a.DatabaseURL != "" {
		if u, err := url.Parse(a.DatabaseURL); err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
			// The URL may carry a password: name the variable, never echo the value.
			errs = append(errs, errors.New("BC_DATABASE_URL: not a postgres:// or postgresql:// URL"))
		}
	} else if requireServe {
		errs = append(errs, errors.New("BC_DATABASE_URL: required"))
	}
	a.SealKey = getenv("BC_SEAL_KEY")
	if a.SealKey != "" {
		if _, err := seal.ParseKey(a.SealKey); err != nil {
			errs = append(errs, errors.New("BC_SEAL_KEY: not a base64 32-byte key"))
		}
	} else if requireServe {
		errs = append(errs, errors.New("BC_SEAL_KEY: required"))
	}
	a.Listen = get("BC_LISTEN", ":8080")
	a.Replica = get("BC_REPLICA", hostname())
	a.CORSOrigins = nil
	for _, o := range strings.Split(get("BC_CORS_ORIGINS", "*"), ",") {
		if o = strings.TrimSpace(o); o != "" {
			a.CORSOrigins = append(a.CORSOrigins, o)
		}
	}
	if v := get("BC_LOG_LEVEL", "info"); c.LogLevel.UnmarshalText([]byte(v)) != nil {
		bad("BC_LOG_LEVEL", v, "not one of debug, info, warn, error")
	}
	if v := get("BC_PUBLIC_URL", ""); v != "" {
		u, err := url.Parse(v)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			bad("BC_PUBLIC_URL", v, "not an http:// or https:// URL")
		}
		a.Reconcilers.JoinURL = v
	}
	if v := get("BC_OUTBOUND_ALLOW", ""); v != "" {
		allow, err := netguard.ParseAllow(v)
		if err != nil {
			bad("BC_OUTBOUND_ALLOW", v, err.Error())
		}
		a.OutboundAllow = allow
	}
	a.OpenFGAURL = get("BC_OPENFGA_URL", "")
	if a.OpenFGAURL != "" {
		if u, err := url.Parse(a.OpenFGAURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			bad("BC_OPENFGA_URL", a.OpenFGAURL, "not an http:// or https:// URL")
		}
	}
	a.OpenFGAStore = get("BC_OPENFGA_STORE", "")
	a.OpenFGAToken = getenv("BC_OPENFGA_TOKEN")
	a.OpenFGADatastore = get("BC_OPENFGA_DATASTORE", authz.DatastorePostgres)
	if a.OpenFGADatastore != authz.DatastorePostgres && a.OpenFGADatastore != authz.DatastoreMemory {
		bad("BC_OPENFGA_DATASTORE", a.OpenFGADatastore, "not postgres or memory")
	}
	if v := get("BC_RECONCILE", "true"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			bad("BC_RECONCILE", v, "not true or false")
		}
		a.Reconcile = b
	}
	a.DrainDelay = defaultDrainDelay
	dur("BC_DRAIN_DELAY", &a.DrainDelay, true)
	dur("BC_BODY_READ_TIMEOUT", &a.BodyReadTimeout, false)
	num("BC_MAX_CONNECTIONS", &a.MaxConnections)
	dur("BC_WATCH_POLL", &a.WatchPoll, false)
	dur("BC_WATCH_HEARTBEAT", &a.WatchHeartbeat, false)

	r := &a.Reconcilers
	num("BC_RECONCILE_CONCURRENCY", &r.Concurrency)
	dur("BC_LEASE_TTL", &r.LeaseTTL, false)
	dur("BC_RECONCILE_POLL", &r.PollInterval, false)
	dur("BC_PERIODIC_INTERVAL", &r.PeriodicInterval, false)
	dur("BC_RECONCILE_BACKOFF", &r.BackoffInitial, false)
	dur("BC_RECONCILE_BACKOFF_MAX", &r.BackoffMax, false)
	dur("BC_PROVIDER_POLL", &r.ProviderPoll, false)
	dur("BC_DEPENDENCY_POLL", &r.DependencyPoll, false)
	dur("BC_CREATE_WINDOW", &r.CreateWindow, false)
	dur("BC_METAL_POWER_SETTLE", &r.MetalPowerSettle, false)
	num("BC_DO_REQUESTS_PER_MINUTE", &r.DigitalOcean.RequestsPerMinute)
	num("BC_DO_BURST", &r.DigitalOcean.Burst)
	dur("BC_DO_REQUEST_TIMEOUT", &r.DigitalOcean.RequestTimeout, false)
	ret := &r.Retention
	dur("BC_EVENT_RETENTION", &ret.Events, false)
	dur("BC_IDEMPOTENCY_RETENTION", &ret.Idempotency, false)
	dur("BC_WORK_RETENTION", &ret.WorkItems, false)
	dur("BC_USAGE_RETENTION", &ret.Usage, false)
	if err := ret.WithDefaults().CheckFloors(); err != nil {
		errs = append(errs, err)
	}
	a.MetricsListen = get("BC_METRICS_LISTEN", "")
	if v := get("BC_OTLP_ENDPOINT", ""); v != "" {
		if u, err := url.Parse(v); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			bad("BC_OTLP_ENDPOINT", v, "not an http:// or https:// URL")
		}
		a.Tracing.Endpoint = v
	}
	otelAll, otelTraces := get("OTEL_EXPORTER_OTLP_ENDPOINT", ""), get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	a.Tracing.FromEnvironment = a.Tracing.Endpoint == "" && (otelAll != "" || otelTraces != "")
	if v := get("BC_TRACE_SAMPLE_RATIO", ""); v != "" {
		r, err := strconv.ParseFloat(v, 64)
		if err != nil || !(r > 0 && r <= 1) {
			bad("BC_TRACE_SAMPLE_RATIO", v, "not a ratio in (0, 1]")
		}
		a.Tracing.SampleRatio = r
	}
	if len(errs) == 0 {
		// Cross-field rules (the periodic bound) are checked here too, not when the reconcilers start.
		if _, err := r.WithDefaults(); err != nil {
			errs = append(errs, fmt.Errorf("BC_PERIODIC_INTERVAL: %w", err))
		}
	}
	if len(errs) > 0 {
		return c, fmt.Errorf("configuration: %w", errors.Join(errs...))
	}
	return c, nil
}

func hostname() string {
	h, err := os.Hostname()
	if err != nil {
		return "bc-server"
	}
	return h
}
