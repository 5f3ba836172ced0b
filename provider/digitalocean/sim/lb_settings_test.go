package sim_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/digitalocean/godo"

	"better-compute.dev/compute/provider/digitalocean/sim"
)

// TestLoadBalancerSettings: the simulator checks the settings' bounds and choices as
// DigitalOcean documents them, keeps what was asked (defaults filled in), keeps network and
// network_stack and the create's tags on a PUT, refuses a PUT that changes network or
// network_stack, and lets size_unit change once per hour.
func TestLoadBalancerSettings(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sim.Options{})
	ctx := context.Background()
	d := e.seedDroplet(t, sim.DropletSeed{Name: "web-1", Region: "nyc3"})
	u64 := func(v uint64) *uint64 { return &v }
	refused := map[string]func(r *godo.LoadBalancerRequest){
		"size_unit 101":            func(r *godo.LoadBalancerRequest) { r.SizeUnit = 101 },
		"idle timeout 29":          func(r *godo.LoadBalancerRequest) { r.HTTPIdleTimeoutSeconds = u64(29) },
		"idle timeout 601":         func(r *godo.LoadBalancerRequest) { r.HTTPIdleTimeoutSeconds = u64(601) },
		"network unknown":          func(r *godo.LoadBalancerRequest) { r.Network = "PRIVATE" },
		"network_stack unknown":    func(r *godo.LoadBalancerRequest) { r.NetworkStack = "IPV6" },
		"tls_cipher_policy weak":   func(r *godo.LoadBalancerRequest) { r.TLSCipherPolicy = "WEAK" },
		"a tag with a space":       func(r *godo.LoadBalancerRequest) { r.Tags = []string{"a b"} },
		"size_unit with size slug": func(r *godo.LoadBalancerRequest) { r.SizeUnit, r.SizeSlug = 2, "lb-small" },
	}
	for name, edit := range refused {
		r := regionalRequest("lb-refused", d.ID)
		edit(r)
		if _, _, err := e.do.LoadBalancers.Create(ctx, r); statusOf(err) != http.StatusUnprocessableEntity {
			t.Errorf("%s: %v, want 422", name, err)
		}
	}

	yes := true
	r := regionalRequest("lb-1", d.ID)
	r.SizeUnit, r.HTTPIdleTimeoutSeconds, r.EnableProxyProtocol, r.EnableBackendKeepalive = 2, u64(300), true, true
	r.Network, r.NetworkStack, r.TLSCipherPolicy, r.DisableLetsEncryptDNSRecords = "INTERNAL", "DUALSTACK", "STRONG", &yes
	r.Tags = []string{"env:prod", "team"}
	lb, _, err := e.do.LoadBalancers.Create(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	got, _, err := e.do.LoadBalancers.Get(ctx, lb.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.SizeUnit != 2 || *got.HTTPIdleTimeoutSeconds != 300 || !got.EnableProxyProtocol || !got.EnableBackendKeepalive ||
		got.Network != "INTERNAL" || got.NetworkStack != "DUALSTACK" || got.TLSCipherPolicy != "STRONG" ||
		!*got.DisableLetsEncryptDNSRecords || !slices.Equal(got.Tags, []string{"env:prod", "team"}) {
		t.Fatalf("stored %+v", got)
	}
	e.clock.Advance(time.Minute) // active, and past any update delay

	put := func(edit func(r *godo.LoadBalancerRequest)) (*godo.LoadBalancer, error) {
		r := regionalRequest("lb-1", d.ID)
		r.SizeUnit = 2
		edit(r)
		lb, _, err := e.do.LoadBalancers.Update(ctx, lb.ID, r)
		e.clock.Advance(time.Minute)
		return lb, err
	}
	if _, err := put(func(r *godo.LoadBalancerRequest) { r.Network = "EXTERNAL" }); statusOf(err) != http.StatusUnprocessableEntity {
		t.Errorf("PUT changing network: %v, want 422", err)
	}
	if _, err := put(func(r *godo.LoadBalancerRequest) { r.NetworkStack = "IPV4" }); statusOf(err) != http.StatusUnprocessableEntity {
		t.Errorf("PUT changing network_stack: %v, want 422", err)
	}
	after, err := put(func(r *godo.LoadBalancerRequest) { r.Tags = []string{"other"} })
	if err != nil {
		t.Fatal(err)
	}
	if after.Network != "INTERNAL" || after.NetworkStack != "DUALSTACK" || *after.HTTPIdleTimeoutSeconds != 60 ||
		after.TLSCipherPolicy != "DEFAULT" || after.EnableProxyProtocol || !slices.Equal(after.Tags, []string{"env:prod", "team"}) {
		t.Errorf("a PUT without the settings: %+v, want network and stack and tags kept, the rest at defaults", after)
	}

	if _, err := put(func(r *godo.LoadBalancerRequest) { r.SizeUnit = 3 }); err != nil {
		t.Fatalf("first resize: %v", err)
	}
	_, err = put(func(r *godo.LoadBalancerRequest) { r.SizeUnit = 4 })
	if statusOf(err) != http.StatusUnprocessableEntity || !strings.Contains(messageOf(err), "once per hour") {
		t.Fatalf("second resize within the hour: %v, want 422 once per hour", err)
	}
	if cur, _, _ := e.do.LoadBalancers.Get(ctx, lb.ID); cur.SizeUnit != 3 {
		t.Errorf("the refused resize changed size_unit to %d", cur.SizeUnit)
	}
	e.clock.Advance(time.Hour)
	if after, err := put(func(r *godo.LoadBalancerRequest) { r.SizeUnit = 4 }); err != nil || after.SizeUnit != 4 {
		t.Errorf("resize an hour later: %v %v", after, err)
	}
}
