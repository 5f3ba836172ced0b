package main

import (
	"bytes"
	"context"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"better-compute.dev/compute/seal"
)

func validEnv(t *testing.T) map[string]string {
	t.Helper()
	key, err := seal.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	return map[string]string{
		"BC_DATABASE_URL": "postgres://postgres@127.0.0.1:1/postgres?sslmode=disable",
		"BC_SEAL_KEY":     key.Encode(),
	}
}

// lookup is an environment holding exactly m.
func lookup(m map[string]string) environment {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	return environment{get: func(k string) string { return m[k] }, names: names}
}

// TestParseConfigBadValueNamesVariable: every knob with a value that does not parse stops the
// configuration with an error naming that variable.
func TestParseConfigBadValueNamesVariable(t *testing.T) {
	t.Parallel()
	bad := map[string]string{
		"BC_DATABASE_URL": "mysql://x", "BC_SEAL_KEY": "short", "BC_LOG_LEVEL": "loud",
		"BC_PUBLIC_URL": "ftp://x", "BC_OUTBOUND_ALLOW": "not-a-prefix", "BC_OPENFGA_URL": "nohost",
		"BC_OPENFGA_DATASTORE": "mysql", "BC_RECONCILE": "maybe", "BC_DRAIN_DELAY": "-1s", "BC_BODY_READ_TIMEOUT": "0s", "BC_MAX_CONNECTIONS": "lots", "BC_WATCH_POLL": "0s", "BC_WATCH_HEARTBEAT": "soon",
		"BC_RECONCILE_CONCURRENCY": "0", "BC_LEASE_TTL": "soon", "BC_RECONCILE_POLL": "x",
		"BC_PERIODIC_INTERVAL": "6m", "BC_RECONCILE_BACKOFF": "-5s", "BC_RECONCILE_BACKOFF_MAX": "1",
		"BC_PROVIDER_POLL": "fast", "BC_DEPENDENCY_POLL": "0", "BC_CREATE_WINDOW": "long",
		"BC_DO_REQUESTS_PER_MINUTE": "many", "BC_DO_BURST": "-1", "BC_DO_REQUEST_TIMEOUT": "1y", "BC_METAL_POWER_SETTLE": "-1m",
		"BC_OTLP_ENDPOINT": "collector:4317", "BC_TRACE_SAMPLE_RATIO": "2",
		"BC_EVENT_RETENTION": "30m", "BC_IDEMPOTENCY_RETENTION": "23h", "BC_WORK_RETENTION": "soon", "BC_USAGE_RETENTION": "720h",
	}
	// Free-form variables have no bad value.
	free := []string{"BC_LISTEN", "BC_REPLICA", "BC_CORS_ORIGINS", "BC_OPENFGA_STORE", "BC_OPENFGA_TOKEN", "BC_METRICS_LISTEN",
		"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"}
	for _, v := range envVars {
		if _, ok := bad[v.name]; !ok && !slices.Contains(free, v.name) {
			t.Errorf("%s has no bad-value case", v.name)
		}
	}
	for name, value := range bad {
		env := validEnv(t)
		env[name] = value
		_, err := parseConfig(lookup(env), true)
		if err == nil {
			t.Errorf("%s=%q: no error", name, value)
			continue
		}
		if !strings.Contains(err.Error(), name) {
			t.Errorf("%s=%q: error %q does not name the variable", name, value, err)
		}
	}
	// Secrets are named, never echoed.
	env := validEnv(t)
	env["BC_DATABASE_URL"] = "mysql://user:hunter2@db/x"
	if _, err := parseConfig(lookup(env), true); err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("database URL error %v echoes the password", err)
	}
	// serve requires the database and the key.
	if _, err := parseConfig(lookup(nil), true); err == nil || !strings.Contains(err.Error(), "BC_DATABASE_URL") || !strings.Contains(err.Error(), "BC_SEAL_KEY") {
		t.Errorf("empty environment: %v", err)
	}
}

// TestParseConfigUnknownVariableNamesIt: a BC_* variable that is set but unknown (mistyped)
// stops serve and dev with an error naming it; other variables of the environment are ignored.
func TestParseConfigUnknownVariableNamesIt(t *testing.T) {
	t.Parallel()
	env := validEnv(t)
	env["BC_LEASE_TIMEOUT"] = "30s" // BC_LEASE_TTL mistyped
	env["BC_DATABSE_URL"] = "postgres://x"
	env["HOME"] = "/root"
	env["BC_TEST_DATABASE_URL"] = "postgres://y" // the test harness's, not a typo
	env["BC_SERVER_BIN"] = "/tmp/bc-server"      // the TS SDK test runner's
	env["BC_ENDPOINT"] = "http://127.0.0.1:8080" // bcctl's, set in the same shell
	env["BC_TENANT"] = "demo"
	_, err := parseConfig(lookup(env), true)
	if err == nil || !strings.Contains(err.Error(), "BC_DATABSE_URL, BC_LEASE_TIMEOUT") {
		t.Fatalf("unknown variables: %v, want an error naming both", err)
	}
	if strings.Contains(err.Error(), "postgres://x") || strings.Contains(err.Error(), "HOME") ||
		strings.Contains(err.Error(), "BC_TEST_") || strings.Contains(err.Error(), "BC_SERVER_BIN") || strings.Contains(err.Error(), "BC_ENDPOINT") {
		t.Errorf("error %q echoes a value or names a variable that is not a typo", err)
	}
	for _, cmd := range []string{"serve", "dev"} {
		var out, errOut bytes.Buffer
		if code := run(context.Background(), []string{cmd}, lookup(env), &out, &errOut); code != 1 || !strings.Contains(errOut.String(), "BC_LEASE_TIMEOUT") {
			t.Errorf("%s with BC_LEASE_TIMEOUT set: exit %d, stderr %q", cmd, code, errOut.String())
		}
	}
	delete(env, "BC_LEASE_TIMEOUT")
	delete(env, "BC_DATABSE_URL")
	if _, err := parseConfig(lookup(env), true); err != nil {
		t.Errorf("known variables only: %v", err)
	}
}

// TestParseConfigFields: values land in the fields passed down, defaults otherwise.
func TestParseConfigFields(t *testing.T) {
	t.Parallel()
	c, err := parseConfig(lookup(validEnv(t)), true)
	if err != nil {
		t.Fatal(err)
	}
	if c.App.Listen != ":8080" || !c.App.Reconcile || c.App.OpenFGADatastore != "postgres" || c.App.DrainDelay != defaultDrainDelay ||
		!slices.Equal(c.App.CORSOrigins, []string{"*"}) || c.App.Reconcilers.LeaseTTL != 0 {
		t.Errorf("defaults: %+v", c.App)
	}
	env := validEnv(t)
	for k, v := range map[string]string{
		"BC_LEASE_TTL": "3s", "BC_PERIODIC_INTERVAL": "5s", "BC_DO_BURST": "7", "BC_WATCH_POLL": "20ms",
		"BC_RECONCILE": "false", "BC_PUBLIC_URL": "https://cp.example.com", "BC_OUTBOUND_ALLOW": "10.0.0.0/8",
		"BC_LOG_LEVEL": "debug", "BC_DRAIN_DELAY": "0s", "BC_CORS_ORIGINS": "https://a.example, https://b.example",
	} {
		env[k] = v
	}
	c, err = parseConfig(lookup(env), true)
	if err != nil {
		t.Fatal(err)
	}
	r := c.App.Reconcilers
	if r.LeaseTTL != 3*time.Second || r.PeriodicInterval != 5*time.Second || r.DigitalOcean.Burst != 7 || c.App.WatchPoll != 20*time.Millisecond ||
		c.App.Reconcile || r.JoinURL != "https://cp.example.com" || len(c.App.OutboundAllow) != 1 || c.LogLevel.String() != "DEBUG" ||
		c.App.DrainDelay != 0 || !slices.Equal(c.App.CORSOrigins, []string{"https://a.example", "https://b.example"}) {
		t.Errorf("set: %+v", c)
	}
}

// TestEveryVariableDocumented: the variables parseConfig reads are the ones usage lists, and
// the configuration table of docs/operations.md has a row for each.
func TestEveryVariableDocumented(t *testing.T) {
	t.Parallel()
	var read []string
	_, _ = parseConfig(environment{get: func(k string) string { read = append(read, k); return "" }}, true)
	var listed []string
	for _, v := range envVars {
		listed = append(listed, v.name)
	}
	slices.Sort(read)
	read = slices.Compact(read)
	slices.Sort(listed)
	if !slices.Equal(read, listed) {
		t.Errorf("read %v, listed %v", read, listed)
	}
	table, err := os.ReadFile("../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range listed {
		if !regexp.MustCompile("(?m)^\\| `" + name + "` \\|").Match(table) {
			t.Errorf("docs/operations.md has no table row for %s", name)
		}
	}
}

// TestCommandLine: help exits 0 with usage on stdout; an unknown or missing command exits 2;
// a bad knob stops serve and dev before they start, naming the variable.
func TestCommandLine(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"help"}, {"-h"}, {"--help"}} {
		var out, errOut bytes.Buffer
		if code := run(context.Background(), args, lookup(nil), &out, &errOut); code != 0 || !strings.Contains(out.String(), "usage: bc-server") ||
			!strings.Contains(out.String(), "BC_DRAIN_DELAY") {
			t.Errorf("%v: exit %d, stdout %q", args, code, out.String())
		}
	}
	for _, args := range [][]string{nil, {"frobnicate"}, {"bootstrap-admin", "--bogus"}, {"revoke-token"}} {
		var out, errOut bytes.Buffer
		if code := run(context.Background(), args, lookup(nil), &out, &errOut); code != 2 || !strings.Contains(errOut.String(), "bc-server") {
			t.Errorf("%v: exit %d, stderr %q", args, code, errOut.String())
		}
	}
	for _, cmd := range []string{"serve", "dev"} {
		env := validEnv(t)
		env["BC_LEASE_TTL"] = "soon"
		var out, errOut bytes.Buffer
		if code := run(context.Background(), []string{cmd}, lookup(env), &out, &errOut); code != 1 || !strings.Contains(errOut.String(), "BC_LEASE_TTL") {
			t.Errorf("%s with a bad BC_LEASE_TTL: exit %d, stderr %q", cmd, code, errOut.String())
		}
	}
}

// TestObservabilityConfig: tracing is off unless an endpoint is named (ours or the standard
// OpenTelemetry variable), and the metrics listener is taken as given.
func TestObservabilityConfig(t *testing.T) {
	t.Parallel()
	env := validEnv(t)
	c, err := parseConfig(lookup(env), true)
	if err != nil || c.App.Tracing.Enabled() || c.App.MetricsListen != "" {
		t.Fatalf("defaults: %+v %v", c.App.Tracing, err)
	}
	env["BC_METRICS_LISTEN"] = "127.0.0.1:9090"
	env["BC_OTLP_ENDPOINT"] = "http://collector:4317"
	env["BC_TRACE_SAMPLE_RATIO"] = "0.25"
	if c, err = parseConfig(lookup(env), true); err != nil {
		t.Fatal(err)
	}
	if c.App.MetricsListen != "127.0.0.1:9090" || c.App.Tracing.Endpoint != "http://collector:4317" || c.App.Tracing.SampleRatio != 0.25 || c.App.Tracing.FromEnvironment {
		t.Fatalf("set: %+v %q", c.App.Tracing, c.App.MetricsListen)
	}
	env = validEnv(t)
	env["OTEL_EXPORTER_OTLP_ENDPOINT"] = "http://collector:4317"
	if c, err = parseConfig(lookup(env), true); err != nil || !c.App.Tracing.FromEnvironment || !c.App.Tracing.Enabled() {
		t.Fatalf("standard variable: %+v %v", c.App.Tracing, err)
	}
}

// TestParseConfigKubernetesServiceLinks: the variables Kubernetes sets for Services named bc and
// bc-metrics (enableServiceLinks) never stop a replica; a knob mistyped into one of those name
// shapes, with a value Kubernetes would not write, is still refused by name.
func TestParseConfigKubernetesServiceLinks(t *testing.T) {
	t.Parallel()
	links := map[string]string{
		"BC_SERVICE_HOST": "10.96.0.12", "BC_SERVICE_PORT": "80", "BC_SERVICE_PORT_HTTP": "80",
		"BC_PORT": "tcp://10.96.0.12:80", "BC_PORT_80_TCP": "tcp://10.96.0.12:80",
		"BC_PORT_80_TCP_PROTO": "tcp", "BC_PORT_80_TCP_PORT": "80", "BC_PORT_80_TCP_ADDR": "10.96.0.12",
		"BC_METRICS_SERVICE_HOST": "fd00::7", "BC_METRICS_SERVICE_PORT": "9090",
		"BC_METRICS_PORT": "tcp://[fd00::7]:9090", "BC_METRICS_PORT_9090_UDP_ADDR": "fd00::7",
		// Service bc-service: its link BC_SERVICE_PORT would be tcp://..., a shape shared with
		// Service bc's port number.
		"BC_SERVICE_SERVICE_HOST": "10.96.0.13",
	}
	env := validEnv(t)
	for k, v := range links {
		env[k] = v
	}
	if _, err := parseConfig(lookup(env), true); err != nil {
		t.Fatalf("service links stop the configuration: %v", err)
	}
	env["BC_SERVICE_PORT"] = "tcp://10.96.0.13:8080"
	if _, err := parseConfig(lookup(env), true); err != nil {
		t.Fatalf("Service bc-service's link: %v", err)
	}
	typos := map[string]string{
		"BC_METRICS_PORT":      "9090",         // meant BC_METRICS_LISTEN
		"BC_SERVICE_HOST":      "db.internal",  // not an IP
		"BC_PORT":              "8080",         // not proto://ip:port
		"BC_PORT_80_TCP_PROTO": "http",         // not a protocol Kubernetes writes
		"BC_LISTEN_PORT":       "tcp://x:8080", // no such shape
	}
	for name, value := range typos {
		env := validEnv(t)
		env[name] = value
		_, err := parseConfig(lookup(env), true)
		if err == nil || !strings.Contains(err.Error(), name+": not a bc-server variable") {
			t.Errorf("%s=%q: %v, want it refused by name", name, value, err)
		}
	}
	// serve with the links set gets past the configuration (it fails later, on the unreachable
	// database in validEnv, not on a variable).
	var out, errOut bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	code := run(ctx, []string{"serve"}, lookup(env), &out, &errOut)
	if code != 1 || errOut.Len() == 0 || strings.Contains(errOut.String(), "not a bc-server variable") {
		t.Errorf("serve with service links: exit %d, stderr %q", code, errOut.String())
	}
}
