package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"better-compute.dev/compute/app"
	"better-compute.dev/compute/app/apptest"
	"better-compute.dev/compute/provider/digitalocean/sim"
)

// harness runs the real server (apptest: PostgreSQL, OpenFGA, the reconcilers against the
// DigitalOcean simulator) and drives bcctl's Run in process.
type harness struct {
	t      *testing.T
	stack  *apptest.Stack
	tenant apptest.Tenant
	env    map[string]string
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	simulator := sim.New(sim.Options{
		AcceptAnyToken: true, RequestsPerMinute: 100000, RequestsPerHour: 1000000,
		LoadBalancerActiveDelay: 100 * time.Millisecond, LoadBalancerIPDelay: 150 * time.Millisecond,
		LoadBalancerUpdateDelay: 100 * time.Millisecond, DropletActiveDelay: 100 * time.Millisecond,
	})
	url, err := simulator.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = simulator.Close() })
	short := func(c *app.Config) {
		r := &c.Reconcilers
		r.LeaseTTL, r.PollInterval, r.PeriodicInterval = 5*time.Second, 20*time.Millisecond, time.Second
		r.ProviderPoll, r.DependencyPoll = 100*time.Millisecond, 200*time.Millisecond
		r.BackoffInitial, r.BackoffMax = 50*time.Millisecond, 500*time.Millisecond
		r.DigitalOcean.RequestsPerMinute, r.DigitalOcean.Burst = 30000, 100
	}
	s := apptest.Start(t, apptest.WithReconcile(), short)
	s.SimulatorURL = url
	h := &harness{t: t, stack: s, env: map[string]string{
		"HOME":            t.TempDir(),
		"XDG_CONFIG_HOME": filepath.Join(t.TempDir(), "xdg"),
	}}
	h.tenant = s.NewTenant(t, "cli-tenant", "editor")
	return h
}

type result struct {
	code           int
	stdout, stderr string
}

// bcctl runs one command line with the harness's environment plus extra (KEY=VALUE) and stdin.
func (h *harness) bcctl(stdin string, extra []string, args ...string) result {
	h.t.Helper()
	env := map[string]string{}
	for k, v := range h.env {
		env[k] = v
	}
	for _, kv := range extra {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	var out, errb bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	code := Run(ctx, args, Env{Getenv: func(k string) string { return env[k] }, Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &errb})
	return result{code, out.String(), errb.String()}
}

func (h *harness) ok(args ...string) string {
	h.t.Helper()
	r := h.bcctl("", nil, args...)
	if r.code != 0 {
		h.t.Fatalf("bcctl %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
	}
	return r.stdout
}

func decode(t *testing.T, raw string) map[string]any {
	t.Helper()
	out := map[string]any{}
	if err := json.Unmarshal([]byte(raw), &out); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, raw)
	}
	return out
}

// errorOf reads the JSON error bcctl prints on stderr with -o json.
func errorOf(t *testing.T, r result) map[string]any {
	t.Helper()
	doc := decode(t, r.stderr)
	e, ok := doc["error"].(map[string]any)
	if !ok {
		t.Fatalf("stderr has no error object: %s", r.stderr)
	}
	return e
}

func TestLoadBalancerLifecycleThroughTheCLI(t *testing.T) {
	h := newHarness(t)
	tn := h.tenant

	// configure once: the token goes in through stdin, is stored with mode 0600, never printed.
	r := h.bcctl(tn.Token+"\n", nil, "configure", "--endpoint", h.stack.App.URL+"/", "--tenant", tn.ID, "--token-stdin")
	if r.code != 0 {
		t.Fatalf("configure: exit %d: %s", r.code, r.stderr)
	}
	if strings.Contains(r.stdout+r.stderr, tn.Token) {
		t.Fatal("configure printed the token")
	}
	path := filepath.Join(h.env["XDG_CONFIG_HOME"], "bcctl", "config.json")
	st, err := os.Stat(path)
	if err != nil {
		t.Fatalf("config file: %v", err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Fatalf("config file mode %o, want 600", st.Mode().Perm())
	}
	if dst, _ := os.Stat(filepath.Dir(path)); dst.Mode().Perm() != 0o700 {
		t.Fatalf("config dir mode %o, want 700", dst.Mode().Perm())
	}
	shown := h.ok("configure", "show", "-o", "json")
	if strings.Contains(shown, tn.Token) {
		t.Fatal("configure show printed the token")
	}
	if cfg := decode(t, shown); cfg["tokenSet"] != true || cfg["tenant"] != tn.ID || cfg["endpoint"] != h.stack.App.URL {
		t.Fatalf("configure show: %v", cfg)
	}

	// create -> wait -> get -> list -> update -> events -> usage -> delete, all from the config file.
	created := decode(t, h.ok("lb", "create", "--name", "web", "--pool", tn.PoolID, "--region", "nyc3",
		"--forward", "http:80:http:8080", "-o", "json"))
	id, _ := created["id"].(string)
	if !strings.HasPrefix(id, "plb_") || created["state"] != "pending" || created["name"] != "web" || created["tenantId"] != tn.ID {
		t.Fatalf("create: %v", created)
	}
	if targets, _ := created["targets"].(map[string]any); targets["pool"] != true {
		t.Fatalf("create without a target flag targets the pool: %v", created["targets"])
	}
	// A wait for a state the load balancer does not reach in time exits 8 and says where it is.
	if r := h.bcctl("", nil, "lb", "wait", id, "--for", "deleted", "--wait-timeout", "300ms"); r.code != ExitWaitFailed ||
		!strings.Contains(r.stderr, "not deleted, after 300ms") {
		t.Fatalf("wait past its time: exit %d, stderr %s", r.code, r.stderr)
	}
	ready := decode(t, h.ok("lb", "wait", id, "--interval", "50ms", "--wait-timeout", "90s", "-o", "json"))
	if ready["state"] != "ready" || ready["address"] == nil || ready["address"] == "" {
		t.Fatalf("wait: %v", ready)
	}
	got := decode(t, h.ok("-o", "json", "lb", "get", id))
	if got["id"] != id || got["state"] != "ready" || got["address"] != ready["address"] {
		t.Fatalf("get: %v", got)
	}
	table := h.ok("lb", "get", id)
	if !strings.Contains(table, "state:") || !strings.Contains(table, "ready") || !strings.Contains(table, "http:80 -> http:8080") {
		t.Fatalf("get as a table:\n%s", table)
	}
	listed := decode(t, h.ok("lb", "list", "--output", "json"))
	lbs, _ := listed["loadBalancers"].([]any)
	if len(lbs) != 1 || lbs[0].(map[string]any)["id"] != id {
		t.Fatalf("list: %v", listed)
	}
	if lines := strings.Split(strings.TrimSpace(h.ok("lb", "list")), "\n"); len(lines) != 2 || !strings.HasPrefix(lines[0], "ID") || !strings.HasPrefix(lines[1], id) {
		t.Fatalf("list as a table:\n%s", strings.Join(lines, "\n"))
	}
	updated := decode(t, h.ok("lb", "update", id, "--health-check", "http:8080:/healthz", "-o", "json"))
	if hc, _ := updated["healthCheck"].(map[string]any); hc["path"] != "/healthz" || updated["state"] != "updating" {
		t.Fatalf("update: %v", updated)
	}
	// --clear removes a part: the update mask names it with no value.
	cleared := decode(t, h.ok("lb", "update", id, "--clear", "health-check", "-o", "json"))
	if _, has := cleared["healthCheck"]; has {
		t.Fatalf("update --clear health-check: %v", cleared)
	}
	if r := h.bcctl("", nil, "lb", "update", id); r.code != ExitUsage {
		t.Fatalf("update with no part: exit %d, want %d", r.code, ExitUsage)
	}
	evs := decode(t, h.ok("events", "list", "--resource", id, "-o", "json"))
	types := map[string]bool{}
	for _, e := range evs["events"].([]any) {
		types[e.(map[string]any)["type"].(string)] = true
	}
	if !types["providerLoadBalancer.created"] || !types["providerLoadBalancer.updated"] {
		t.Fatalf("events: %v", types)
	}
	// watch from the start: the first event of this load balancer is its creation; one JSON a line.
	watched := strings.TrimSpace(h.ok("events", "watch", "--resource", id, "--count", "1", "-o", "json"))
	if w := decode(t, watched); w["type"] != "providerLoadBalancer.created" || w["resourceId"] != id {
		t.Fatalf("watch: %s", watched)
	}
	if u := decode(t, h.ok("usage", "-o", "json")); u == nil {
		t.Fatal("usage: no document")
	}
	deleted := decode(t, h.ok("lb", "delete", id, "--wait", "--interval", "50ms", "--wait-timeout", "90s", "-o", "json"))
	if deleted["state"] != "deleted" {
		t.Fatalf("delete --wait: %v", deleted)
	}
	if listed := decode(t, h.ok("lb", "list", "-o", "json")); len(listed) != 0 {
		t.Fatalf("list after delete: %v", listed)
	}
}

func TestExitCodesByErrorClass(t *testing.T) {
	h := newHarness(t)
	tn := h.tenant
	auth := []string{"BC_ENDPOINT=" + h.stack.App.URL, "BC_TENANT=" + tn.ID, "BC_TOKEN=" + tn.Token}

	// invalid input: exit 3, the field named, nothing created.
	r := h.bcctl("", auth, "lb", "create", "--name", "Bad_Name", "--pool", tn.PoolID, "--region", "nyc3", "--forward", "http:80:http:8080", "-o", "json")
	if r.code != ExitInvalidInput {
		t.Fatalf("bad name: exit %d, want %d: %s", r.code, ExitInvalidInput, r.stderr)
	}
	if e := errorOf(t, r); e["code"] != "INVALID_INPUT" || e["field"] != "name" {
		t.Fatalf("bad name: %v", e)
	}
	r = h.bcctl("", auth, "lb", "create", "--name", "web", "--pool", tn.PoolID, "--region", "nyc3", "-o", "json")
	if e := errorOf(t, r); r.code != ExitInvalidInput || e["field"] != "forwarding" {
		t.Fatalf("no forwarding: exit %d, %v", r.code, e)
	}
	// nothing was half-written by the refused creates.
	if r := h.bcctl("", auth, "lb", "list", "-o", "json"); r.code != 0 || len(decode(t, r.stdout)) != 0 {
		t.Fatalf("list after refused creates: exit %d: %s", r.code, r.stdout)
	}

	// not found: exit 4.
	r = h.bcctl("", auth, "lb", "get", "plb_00000000000000000000000000", "-o", "json")
	if e := errorOf(t, r); r.code != ExitNotFound || e["code"] != "NOT_FOUND" {
		t.Fatalf("missing id: exit %d, %v", r.code, e)
	}

	// unauthenticated: exit 5, for a wrong token and for none; the wrong token is not echoed.
	bad := []string{"BC_ENDPOINT=" + h.stack.App.URL, "BC_TENANT=" + tn.ID, "BC_TOKEN=bct_notarealtoken0000000000"}
	r = h.bcctl("", bad, "lb", "list")
	if r.code != ExitDenied || !strings.Contains(r.stderr, "UNAUTHENTICATED") || strings.Contains(r.stderr, "bct_notarealtoken") {
		t.Fatalf("wrong token: exit %d: %s", r.code, r.stderr)
	}
	r = h.bcctl("", []string{"BC_ENDPOINT=" + h.stack.App.URL, "BC_TENANT=" + tn.ID}, "lb", "list")
	if r.code != ExitDenied {
		t.Fatalf("no token: exit %d: %s", r.code, r.stderr)
	}
	// a tenant's token on platform administration: access denied, exit 5.
	r = h.bcctl("", auth, "tenants", "create", "other-tenant")
	if r.code != ExitDenied {
		t.Fatalf("tenant token creating a tenant: exit %d: %s", r.code, r.stderr)
	}

	// usage: exit 2 for a missing argument, an unknown flag, an unknown verb, a bad --output.
	for _, args := range [][]string{{"lb", "get"}, {"lb", "list", "--bogus"}, {"lb", "explode"}, {"nothing"}, {"lb", "list", "-o", "yaml"}, {}} {
		if r := h.bcctl("", auth, args...); r.code != ExitUsage {
			t.Errorf("bcctl %v: exit %d, want %d", args, r.code, ExitUsage)
		}
	}
	// unavailable: nothing listens on the endpoint: exit 6.
	r = h.bcctl("", []string{"BC_ENDPOINT=http://127.0.0.1:1", "BC_TENANT=" + tn.ID, "BC_TOKEN=" + tn.Token}, "lb", "list")
	if r.code != ExitUnavailable {
		t.Fatalf("no server: exit %d: %s", r.code, r.stderr)
	}
	// a quota of 0: QUOTA_EXCEEDED, exit 7.
	admin := []string{"BC_ENDPOINT=" + h.stack.App.URL, "BC_TENANT=" + tn.ID, "BC_TOKEN=" + h.stack.AdminToken}
	if r := h.bcctl("", admin, "quotas", "set", "--pool", tn.PoolID, "--resource", "loadBalancers", "--limit", "0"); r.code != 0 {
		t.Fatalf("quotas set: exit %d: %s", r.code, r.stderr)
	}
	r = h.bcctl("", auth, "lb", "create", "--name", "full", "--pool", tn.PoolID, "--region", "nyc3", "--forward", "http:80:http:8080")
	if r.code != ExitConflict || !strings.Contains(r.stderr, "QUOTA_EXCEEDED") {
		t.Fatalf("no quota: exit %d: %s", r.code, r.stderr)
	}
}

func TestPlatformAdminCommands(t *testing.T) {
	h := newHarness(t)
	admin := []string{"BC_ENDPOINT=" + h.stack.App.URL, "BC_TOKEN=" + h.stack.AdminToken}
	run := func(stdin string, args ...string) string {
		t.Helper()
		r := h.bcctl(stdin, admin, args...)
		if r.code != 0 {
			t.Fatalf("bcctl %s: exit %d: %s", strings.Join(args, " "), r.code, r.stderr)
		}
		return r.stdout
	}
	tenant := decode(t, run("", "tenants", "create", "acme-cli", "--display-name", "Acme", "-o", "json"))
	if tenant["id"] != "acme-cli" || tenant["displayName"] != "Acme" {
		t.Fatalf("tenants create: %v", tenant)
	}
	if got := decode(t, run("", "tenants", "get", "acme-cli", "-o", "json")); got["id"] != "acme-cli" {
		t.Fatalf("tenants get: %v", got)
	}
	if !strings.Contains(run("", "tenants", "list"), "acme-cli") {
		t.Fatal("tenants list lacks the tenant")
	}
	// the provider token comes from stdin, is never printed back.
	acct := decode(t, run("provider-secret-token\n", "--tenant", "acme-cli", "accounts", "create", "--name", "main",
		"--token-file", "-", "--api-url", h.stack.SimulatorURL, "-o", "json"))
	acctID, _ := acct["id"].(string)
	if !strings.HasPrefix(acctID, "pacct_") || acct["tokenSet"] != true {
		t.Fatalf("accounts create: %v", acct)
	}
	if out := run("", "--tenant", "acme-cli", "accounts", "list", "-o", "json"); strings.Contains(out, "provider-secret-token") || !strings.Contains(out, acctID) {
		t.Fatalf("accounts list: %s", out)
	}
	pool := decode(t, run("", "--tenant", "acme-cli", "pools", "create", "--account", acctID, "--name", "main",
		"--region", "nyc3,sfo3", "--flavor", "small=s-1vcpu-1gb", "-o", "json"))
	poolID, _ := pool["id"].(string)
	if regions, _ := pool["regions"].([]any); !strings.HasPrefix(poolID, "pool_") || len(regions) != 2 {
		t.Fatalf("pools create: %v", pool)
	}
	if got := decode(t, run("", "--tenant", "acme-cli", "pools", "get", poolID, "-o", "json")); got["id"] != poolID {
		t.Fatalf("pools get: %v", got)
	}
	updated := decode(t, run("", "--tenant", "acme-cli", "pools", "update", poolID, "--flavor", "small=s-1vcpu-2gb", "-o", "json"))
	if fl := updated["policy"].(map[string]any)["flavors"].([]any); fl[0].(map[string]any)["size"] != "s-1vcpu-2gb" {
		t.Fatalf("pools update: %v", updated)
	}
	q := decode(t, run("", "--tenant", "acme-cli", "quotas", "set", "--pool", poolID, "--resource", "loadBalancers", "--limit", "3", "-o", "json"))
	if q["limit"] != "3" {
		t.Fatalf("quotas set: %v", q)
	}
	lines := strings.Split(strings.TrimSpace(run("", "--tenant", "acme-cli", "quotas", "list")), "\n")
	if len(lines) != 2 || !strings.Contains(lines[1], "loadBalancers") || !strings.HasSuffix(strings.TrimSpace(lines[1]), "3") {
		t.Fatalf("quotas list:\n%s", strings.Join(lines, "\n"))
	}
	if archived := decode(t, run("", "--tenant", "acme-cli", "pools", "archive", poolID, "-o", "json")); archived["state"] != "archived" {
		t.Fatalf("pools archive: %v", archived)
	}
}

// TestHelpEverywhere: --help on bcctl, on every group and on every verb prints usage on stdout and
// exits 0, touching no server (no endpoint is configured).
func TestHelpEverywhere(t *testing.T) {
	h := &harness{t: t, env: map[string]string{"HOME": t.TempDir()}}
	lines := [][]string{{"--help"}, {"-h"}, {"help"}, {"help", "lb"}}
	for _, g := range groups() {
		lines = append(lines, []string{g.name, "--help"})
		for _, v := range g.verbs {
			lines = append(lines, []string{g.name, v.name, "--help"}, []string{g.name, v.name, "-h"})
		}
	}
	for _, args := range lines {
		r := h.bcctl("", nil, args...)
		if r.code != 0 || !strings.Contains(r.stdout, "usage: bcctl") || r.stderr != "" {
			t.Errorf("bcctl %s: exit %d, stdout %q, stderr %q", strings.Join(args, " "), r.code, r.stdout, r.stderr)
		}
	}
}

// TestCompletionBash: bcctl completion bash prints a script that, sourced in bash, completes
// commands (aliases included) and each group's verbs from groups().
func TestCompletionBash(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash is not installed")
	}
	h := &harness{t: t, env: map[string]string{"HOME": t.TempDir()}}
	r := h.bcctl("", nil, "completion", "bash")
	if r.code != 0 || r.stderr != "" || !strings.Contains(r.stdout, "complete -F _bcctl bcctl") {
		t.Fatalf("completion bash: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	script := filepath.Join(t.TempDir(), "bcctl.bash")
	if err := os.WriteFile(script, []byte(r.stdout), 0o600); err != nil {
		t.Fatal(err)
	}
	for line, want := range map[string]string{
		"bcctl l":             "lb",
		"bcctl q":             "quotas",
		"bcctl lb c":          "create",
		"bcctl loadbalancers": "delete get list update wait create", // verbs of an alias, sorted below
		"bcctl pools a":       "archive",
		"bcctl lb create --":  "",
	} {
		words := strings.Fields(line)
		if strings.HasSuffix(line, " ") || line == "bcctl loadbalancers" {
			words = append(words, "")
		}
		cmd := exec.Command("bash", "-c", `source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(( $# - 1 )); _bcctl; echo "${COMPREPLY[*]}"`, "_", script)
		cmd.Args = append(cmd.Args, words...)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		got := strings.Fields(string(out))
		wantFields := strings.Fields(want)
		slices.Sort(got)
		slices.Sort(wantFields)
		if !slices.Equal(got, wantFields) {
			t.Errorf("completing %q: %v, want %v", line, got, wantFields)
		}
	}
	if r := h.bcctl("", nil, "completion", "fish"); r.code != ExitUsage {
		t.Errorf("completion fish: exit %d, want %d", r.code, ExitUsage)
	}
}
