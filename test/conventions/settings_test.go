package conventions

import (
	"fmt"
	"maps"
	"net/http"
	"strings"
	"testing"

	"better-compute.dev/compute/app/apptest"
)

// TestLoadBalancerSettingsBounds: each provider setting out of its range or choices, and each
// label breaking its rules, is refused through the JSON mapping with INVALID_INPUT naming the
// setting, and nothing is written; each bound itself is accepted.
func TestLoadBalancerSettingsBounds(t *testing.T) {
	s := apptest.Start(t)
	tn := s.NewTenant(t, "bounds", "editor")
	n := 0
	create := func(edit func(b map[string]any)) (int, map[string]any) {
		n++
		name := fmt.Sprintf("lb%d", n)
		b := lbBody(tn, name, name)
		edit(b)
		return s.PostJSON(t, "/api/compute/loadBalancers/create", tn.Token, b)
	}
	refused := map[string]struct {
		edit  func(b map[string]any)
		field string
	}{
		"sizeUnit 0":                  {func(b map[string]any) { b["sizeUnit"] = 0 }, "sizeUnit"},
		"sizeUnit 101":                {func(b map[string]any) { b["sizeUnit"] = 101 }, "sizeUnit"},
		"httpIdleTimeoutSeconds 29":   {func(b map[string]any) { b["httpIdleTimeoutSeconds"] = 29 }, "httpIdleTimeoutSeconds"},
		"httpIdleTimeoutSeconds 601":  {func(b map[string]any) { b["httpIdleTimeoutSeconds"] = 601 }, "httpIdleTimeoutSeconds"},
		"network unknown number":      {func(b map[string]any) { b["network"] = 7 }, "network"},
		"networkStack unknown number": {func(b map[string]any) { b["networkStack"] = 9 }, "networkStack"},
		"tlsCipherPolicy unknown":     {func(b map[string]any) { b["tlsCipherPolicy"] = 3 }, "tlsCipherPolicy"},
		"label key upper case":        {func(b map[string]any) { b["labels"] = map[string]any{"Team": "web"} }, "labels"},
		"label key with a colon":      {func(b map[string]any) { b["labels"] = map[string]any{"a:b": "c"} }, "labels"},
		"label value with a colon":    {func(b map[string]any) { b["labels"] = map[string]any{"team": "a:b"} }, "labels"},
		"label value too long":        {func(b map[string]any) { b["labels"] = map[string]any{"team": strings.Repeat("v", 64)} }, "labels"},
		"33 labels": {func(b map[string]any) {
			l := map[string]any{}
			for i := range 33 {
				l["k"+string(rune('a'+i%26))+string(rune('a'+i/26))] = "v"
			}
			b["labels"] = l
		}, "labels"},
		"sizeUnit on a global load balancer": {func(b map[string]any) {
			b["scope"], b["region"] = "global", ""
			b["targets"] = map[string]any{"loadBalancerIds": []any{"plb_" + strings.Repeat("0", 26)}}
			b["sizeUnit"] = 2
		}, ""},
	}
	before := s.RowCounts(t)
	for name, c := range refused {
		status, got := create(c.edit)
		a := answerOf(status, got)
		if a.status != http.StatusBadRequest || a.code != "INVALID_INPUT" || !strings.HasPrefix(a.field, c.field) {
			t.Errorf("%s: %+v %v, want 400 INVALID_INPUT field %s", name, a, got, c.field)
		}
	}
	if after := s.RowCounts(t); !maps.Equal(before, after) {
		t.Errorf("refused creates wrote rows")
	}
	accepted := map[string]func(b map[string]any){
		"sizeUnit 1 and idle 30": func(b map[string]any) { b["sizeUnit"], b["httpIdleTimeoutSeconds"] = 1, 30 },
		"sizeUnit 100, idle 600": func(b map[string]any) { b["sizeUnit"], b["httpIdleTimeoutSeconds"] = 100, 600 },
		"enums by name": func(b map[string]any) {
			b["network"], b["networkStack"] = "LOAD_BALANCER_NETWORK_INTERNAL", "LOAD_BALANCER_NETWORK_STACK_DUALSTACK"
			b["tlsCipherPolicy"] = "LOAD_BALANCER_TLS_CIPHER_POLICY_STRONG"
		},
		"labels at their bounds": func(b map[string]any) {
			b["labels"] = map[string]any{"t" + strings.Repeat("k", 62): strings.Repeat("v", 63), "empty": ""}
		},
	}
	for name, edit := range accepted {
		if status, got := create(edit); status != http.StatusOK {
			t.Errorf("%s: %d %v, want 200", name, status, got)
		}
	}
}

// TestLoadBalancerSettingsRoundTrip: the settings a create gives are returned by create, get and
// list; a load balancer that gave none reads the defaults as absent (numbers), UNSPECIFIED (enums)
// and false; an update changes the updatable ones and a named but absent one returns to the
// default; a create-only one with another value is INVALID_INPUT naming it and writes nothing,
// while the value it already has is accepted as no change.
func TestLoadBalancerSettingsRoundTrip(t *testing.T) {
	s := apptest.Start(t)
	tn := s.NewTenant(t, "settings", "editor")
	b := lbBody(tn, "tuned", "tuned")
	b["sizeUnit"], b["httpIdleTimeoutSeconds"] = 3, 120
	b["enableProxyProtocol"], b["enableBackendKeepalive"], b["disableLetsEncryptDnsRecords"] = true, true, true
	b["network"], b["networkStack"] = "LOAD_BALANCER_NETWORK_INTERNAL", "LOAD_BALANCER_NETWORK_STACK_DUALSTACK"
	b["tlsCipherPolicy"] = "LOAD_BALANCER_TLS_CIPHER_POLICY_STRONG"
	b["labels"] = map[string]any{"team": "web", "env": "prod"}
	status, got := s.PostJSON(t, "/api/compute/loadBalancers/create", tn.Token, b)
	if status != http.StatusOK {
		t.Fatalf("create: %d %v", status, got)
	}
	lb := got["loadBalancer"].(map[string]any)
	id := lb["id"].(string)
	want := map[string]any{
		"sizeUnit": 3.0, "httpIdleTimeoutSeconds": 120.0, "enableProxyProtocol": true, "enableBackendKeepalive": true,
		"disableLetsEncryptDnsRecords": true, "network": "LOAD_BALANCER_NETWORK_INTERNAL",
		"networkStack": "LOAD_BALANCER_NETWORK_STACK_DUALSTACK", "tlsCipherPolicy": "LOAD_BALANCER_TLS_CIPHER_POLICY_STRONG",
	}
	check := func(what string, lb map[string]any, want map[string]any, labels map[string]any) {
		t.Helper()
		for k, v := range want {
			if lb[k] != v {
				t.Errorf("%s: %s = %v, want %v", what, k, lb[k], v)
			}
		}
		if got, _ := lb["labels"].(map[string]any); !maps.Equal(got, labels) {
			t.Errorf("%s: labels %v, want %v", what, got, labels)
		}
	}
	labels := map[string]any{"team": "web", "env": "prod"}
	check("create", lb, want, labels)
	_, got = s.PostJSON(t, "/api/compute/loadBalancers/get", tn.Token, map[string]any{"tenantId": tn.ID, "loadBalancerId": id})
	check("get", got["loadBalancer"].(map[string]any), want, labels)
	_, got = s.PostJSON(t, "/api/compute/loadBalancers/list", tn.Token, map[string]any{"tenantId": tn.ID})
	check("list", got["loadBalancers"].([]any)[0].(map[string]any), want, labels)

	// Defaults.
	_, got = s.PostJSON(t, "/api/compute/loadBalancers/create", tn.Token, lbBody(tn, "plain", "plain"))
	plain := got["loadBalancer"].(map[string]any)
	if _, has := plain["sizeUnit"]; has {
		t.Errorf("a load balancer without sizeUnit reads %v", plain["sizeUnit"])
	}
	if _, has := plain["httpIdleTimeoutSeconds"]; has {
		t.Errorf("a load balancer without httpIdleTimeoutSeconds reads %v", plain["httpIdleTimeoutSeconds"])
	}
	check("defaults", plain, map[string]any{
		"enableProxyProtocol": false, "enableBackendKeepalive": false, "disableLetsEncryptDnsRecords": false,
		"network": "LOAD_BALANCER_NETWORK_UNSPECIFIED", "networkStack": "LOAD_BALANCER_NETWORK_STACK_UNSPECIFIED",
		"tlsCipherPolicy": "LOAD_BALANCER_TLS_CIPHER_POLICY_UNSPECIFIED",
	}, map[string]any{})

	update := func(body map[string]any) (int, map[string]any) {
		body["tenantId"], body["loadBalancerId"] = tn.ID, id
		return s.PostJSON(t, "/api/compute/loadBalancers/update", tn.Token, body)
	}
	status, got = update(map[string]any{"sizeUnit": 5, "httpIdleTimeoutSeconds": nil, "enableProxyProtocol": false,
		"tlsCipherPolicy": "LOAD_BALANCER_TLS_CIPHER_POLICY_DEFAULT"})
	if status != http.StatusOK {
		t.Fatalf("update: %d %v", status, got)
	}
	updated := got["loadBalancer"].(map[string]any)
	want["sizeUnit"], want["enableProxyProtocol"], want["tlsCipherPolicy"] = 5.0, false, "LOAD_BALANCER_TLS_CIPHER_POLICY_DEFAULT"
	delete(want, "httpIdleTimeoutSeconds")
	check("update", updated, want, labels)
	if _, has := updated["httpIdleTimeoutSeconds"]; has {
		t.Errorf("httpIdleTimeoutSeconds named as null stays %v", updated["httpIdleTimeoutSeconds"])
	}
	if status, got := update(map[string]any{"sizeUnit": 101}); answerOf(status, got).field != "sizeUnit" {
		t.Errorf("update sizeUnit 101: %d %v", status, got)
	}

	before := s.RowCounts(t)
	for field, value := range map[string]any{
		"network": "LOAD_BALANCER_NETWORK_EXTERNAL", "networkStack": "LOAD_BALANCER_NETWORK_STACK_IPV4",
		"labels": map[string]any{"team": "api"},
	} {
		a := answerOf(update(map[string]any{field: value, "sizeUnit": 7}))
		if a.status != http.StatusBadRequest || a.code != "INVALID_INPUT" || a.field != field {
			t.Errorf("update of create-only %s: %+v, want 400 INVALID_INPUT field %s", field, a, field)
		}
	}
	if after := s.RowCounts(t); !maps.Equal(before, after) {
		t.Errorf("refused updates wrote rows")
	}
	status, got = update(map[string]any{"network": "LOAD_BALANCER_NETWORK_INTERNAL",
		"networkStack": "LOAD_BALANCER_NETWORK_STACK_DUALSTACK", "labels": map[string]any{"env": "prod", "team": "web"}})
	if status != http.StatusOK {
		t.Errorf("update giving the create-only settings they have: %d %v", status, got)
	}
}
