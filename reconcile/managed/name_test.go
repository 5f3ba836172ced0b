package managed_test

import (
	"testing"

	"better-compute.dev/compute/reconcile/managed"
)

func TestProviderName(t *testing.T) {
	t.Parallel()
	cases := []struct{ reason, id, want string }{
		{"a load balancer id", "plb_01hzzzzzzzzzzzzzzzzzzzzzzz", "bc-plb-01hzzzzzzzzzzzzzzzzzzzzzzz"},
		{"an instance id: droplet names take no underscore", "inst_01h", "bc-inst-01h"},
		{"a pool id names its cluster: a DNS label", "pool_01h", "bc-pool-01h"},
	}
	for _, c := range cases {
		if got := managed.ProviderName(c.id); got != c.want {
			t.Errorf("%s: ProviderName(%q) = %q, want %q", c.reason, c.id, got, c.want)
		}
	}
}
