package observe

import (
	"maps"
	"runtime"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// TestEndpointBoundsCardinality: ids in provider paths become {id}; collection names stay.
func TestEndpointBoundsCardinality(t *testing.T) {
	for in, want := range map[string]string{
		"/v2/load_balancers": "/v2/load_balancers",
		"/v2/load_balancers/4de7ac8b-495b-4884-9a69-1050c6793cd6":                 "/v2/load_balancers/{id}",
		"/v2/droplets/3164444/actions":                                            "/v2/droplets/{id}/actions",
		"/v2/kubernetes/clusters/bd5f5959-5e1e-4205-a714-a914373942af/node_pools": "/v2/kubernetes/clusters/{id}/node_pools",
		"/v2/account": "/v2/account",
	} {
		if got := Endpoint(in); got != want {
			t.Errorf("Endpoint(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestOperationNamesStatements: a database span is named by its statement's first keyword.
func TestOperationNamesStatements(t *testing.T) {
	for in, want := range map[string]string{
		"SELECT 1":                        "SELECT",
		"\n\tinsert into t values ($1)":   "INSERT",
		"-- note\nWITH due AS (SELECT 1)": "WITH",
		"UPDATE\nwork_items SET":          "UPDATE",
		"":                                "SQL",
	} {
		if got := operation(in); got != want {
			t.Errorf("operation(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestBuildInfoIsExported: a registry given Register exports bc_build_info = 1 labelled with
// BuildInfo's version, commit and Go version.
func TestBuildInfoIsExported(t *testing.T) {
	reg := prometheus.NewRegistry()
	if err := Register(reg); err != nil {
		t.Fatal(err)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	b := BuildInfo()
	want := map[string]string{"version": b.Version, "commit": b.Commit, "goversion": runtime.Version()}
	found := 0
	for _, f := range families {
		if f.GetName() != "bc_build_info" {
			continue
		}
		for _, m := range f.GetMetric() {
			found++
			got := map[string]string{}
			for _, l := range m.GetLabel() {
				got[l.GetName()] = l.GetValue()
			}
			if !maps.Equal(got, want) || m.GetGauge().GetValue() != 1 {
				t.Errorf("bc_build_info %v = %v, want %v = 1", got, m.GetGauge().GetValue(), want)
			}
		}
	}
	if found != 1 {
		t.Fatalf("%d bc_build_info series, want 1", found)
	}
}
