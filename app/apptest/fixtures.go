package apptest

import (
	"fmt"
	"sync"
	"testing"

	"better-compute.dev/compute/apierr"
	v1 "better-compute.dev/compute/gen/go/bettercompute/compute/v1"
)

// The requests and checks the tests of core's parts share (core/loadbalancers, core/events and
// the cross-part tests in core).

var (
	keyMu sync.Mutex
	keyN  int
)

// NewKey is an idempotency key (and name suffix) no other call of the process uses.
func NewKey() string {
	keyMu.Lock()
	defer keyMu.Unlock()
	keyN++
	return fmt.Sprintf("key-%d", keyN)
}

// HTTPRule is one plain HTTP forwarding rule.
func HTTPRule() []*v1.ForwardingRule {
	return []*v1.ForwardingRule{{EntryProtocol: "http", EntryPort: 80, TargetProtocol: "http", TargetPort: 8080}}
}

// PoolTargets targets the pool's instances.
func PoolTargets() *v1.LoadBalancerTargets {
	pool := true
	return &v1.LoadBalancerTargets{Pool: &pool}
}

// LoadBalancerRequest is a regional create request in the tenant's pool with a name of its own
// (names are unique per tenant).
func LoadBalancerRequest(tn Tenant, targets *v1.LoadBalancerTargets) *v1.CreateLoadBalancerRequest {
	key := NewKey()
	return &v1.CreateLoadBalancerRequest{TenantId: tn.ID, PoolId: tn.PoolID, Name: "web-" + key, Region: "nyc3",
		Targets: targets, Forwarding: HTTPRule(), IdempotencyKey: key}
}

// Subnet makes a network of the tenant with one subnet in region and returns the subnet's id.
func (s *Stack) Subnet(t testing.TB, tn Tenant, region, cidr string) string {
	t.Helper()
	n, err := s.App.Resources.CreateNetwork(tn.Ctx, &v1.CreateNetworkRequest{TenantId: tn.ID, AccountId: tn.AccountID, Name: "net-" + NewKey()})
	if err != nil {
		t.Fatal(err)
	}
	sn, err := s.App.Resources.CreateSubnet(tn.Ctx, &v1.CreateSubnetRequest{TenantId: tn.ID, NetworkId: n.GetId(), Name: "s", Region: region, IpRange: cidr})
	if err != nil {
		t.Fatal(err)
	}
	return sn.GetId()
}

// Certificate makes a managed certificate of the tenant on account and returns its id.
func (s *Stack) Certificate(t testing.TB, tn Tenant, account string) string {
	t.Helper()
	c, err := s.App.Resources.CreateCertificate(tn.Ctx, &v1.CreateCertificateRequest{TenantId: tn.ID, AccountId: account, Name: "c-" + NewKey(),
		Source: &v1.CreateCertificateRequest_Managed{Managed: &v1.ManagedCertificate{DnsNames: []string{"www.example.com"}}}})
	if err != nil {
		t.Fatal(err)
	}
	return c.GetId()
}

// WantCode fails the test unless err is the platform error code (on field, when given).
func WantCode(t testing.TB, err error, code apierr.Code, field string) {
	t.Helper()
	pe := apierr.From(err)
	if err == nil || pe.Code != code || (field != "" && pe.Field != field) {
		t.Fatalf("got %v, want %s (field %q)", err, code, field)
	}
}
