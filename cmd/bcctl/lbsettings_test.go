package main

import (
	"strings"
	"testing"
)

// TestLoadBalancerSettingsThroughTheCLI: create takes every provider setting as a flag, get
// shows them (as JSON and as a table, "default" where none was chosen), update changes one and
// --clear returns one to the provider's default, and a bad choice is a usage error.
func TestLoadBalancerSettingsThroughTheCLI(t *testing.T) {
	h := newHarness(t)
	tn := h.tenant
	auth := []string{"BC_ENDPOINT=" + h.stack.App.URL, "BC_TENANT=" + tn.ID, "BC_TOKEN=" + tn.Token}
	run := func(args ...string) result { return h.bcctl("", auth, args...) }
	r := run("lb", "create", "--name", "tuned", "--pool", tn.PoolID, "--region", "nyc3", "--forward", "http:80:http:8080",
		"--size-unit", "3", "--http-idle-timeout", "120", "--enable-proxy-protocol", "--tls-cipher-policy", "strong",
		"--network", "internal", "--network-stack", "dualstack", "--label", "team=web", "--label", "env=prod", "-o", "json")
	if r.code != 0 {
		t.Fatalf("create: exit %d: %s", r.code, r.stderr)
	}
	created := decode(t, r.stdout)
	id := created["id"].(string)
	labels, _ := created["labels"].(map[string]any)
	if created["sizeUnit"] != 3.0 || created["httpIdleTimeoutSeconds"] != 120.0 || created["enableProxyProtocol"] != true ||
		created["tlsCipherPolicy"] != "LOAD_BALANCER_TLS_CIPHER_POLICY_STRONG" || created["network"] != "LOAD_BALANCER_NETWORK_INTERNAL" ||
		created["networkStack"] != "LOAD_BALANCER_NETWORK_STACK_DUALSTACK" || labels["team"] != "web" || labels["env"] != "prod" {
		t.Fatalf("create: %v", created)
	}
	table := run("lb", "get", id).stdout
	for _, want := range []string{"sizeUnit:", "3", "network:", "internal", "tlsCipherPolicy:", "strong", "env=prod,team=web", "enableBackendKeepalive:"} {
		if !strings.Contains(table, want) {
			t.Errorf("get as a table lacks %q:\n%s", want, table)
		}
	}
	r = run("lb", "update", id, "--enable-backend-keepalive", "--clear", "http-idle-timeout", "-o", "json")
	if r.code != 0 {
		t.Fatalf("update: exit %d: %s", r.code, r.stderr)
	}
	updated := decode(t, r.stdout)
	if _, has := updated["httpIdleTimeoutSeconds"]; has || updated["enableBackendKeepalive"] != true || updated["sizeUnit"] != 3.0 {
		t.Fatalf("update: %v", updated)
	}
	if r := run("lb", "create", "--name", "bad", "--pool", tn.PoolID, "--region", "nyc3", "--forward", "http:80:http:8080",
		"--network", "private"); r.code != ExitUsage || !strings.Contains(r.stderr, "external, internal") {
		t.Fatalf("--network private: exit %d, stderr %s", r.code, r.stderr)
	}
	if r := run("lb", "update", id, "--size-unit", "0", "-o", "json"); r.code != ExitInvalidInput || errorOf(t, r)["field"] != "sizeUnit" {
		t.Fatalf("--size-unit 0: exit %d, stderr %s", r.code, r.stderr)
	}
}
