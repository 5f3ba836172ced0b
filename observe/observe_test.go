package observe

import "testing"

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
