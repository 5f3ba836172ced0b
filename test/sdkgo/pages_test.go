package sdk_test

import (
	"context"
	"fmt"
	"iter"
	"net/http"
	"sync/atomic"
	"testing"

	"connectrpc.com/connect"

	"better-compute.dev/compute/app/apptest"
	v1 "better-compute.dev/compute/gen/go/bettercompute/compute/v1"
	"better-compute.dev/compute/ids"
	sdk "better-compute.dev/compute/sdk/go"
	"better-compute.dev/compute/store"
)

// TestLoadBalancerPages: the iterator walks every page in creation order and stops when asked.
func TestLoadBalancerPages(t *testing.T) {
	s := apptest.Start(t)
	tn := s.NewTenant(t, "acme", "editor")
	if _, err := s.App.Pools.SetQuota(s.AdminCtx, &v1.SetQuotaRequest{TenantId: tn.ID, PoolId: tn.PoolID, Resource: "loadBalancers", Limit: 20}); err != nil {
		t.Fatal(err)
	}
	c := sdk.New(s.App.URL, tn.Token)
	pool := true
	var want []string
	for i := range 7 {
		resp, err := c.LoadBalancers.CreateLoadBalancer(t.Context(), connect.NewRequest(&v1.CreateLoadBalancerRequest{
			TenantId: tn.ID, PoolId: tn.PoolID, Name: fmt.Sprintf("web-%d", i), Region: "nyc3", Targets: &v1.LoadBalancerTargets{Pool: &pool},
			Forwarding:     []*v1.ForwardingRule{{EntryProtocol: "http", EntryPort: 80, TargetProtocol: "http", TargetPort: 80}},
			IdempotencyKey: fmt.Sprintf("pages-%d", i)}))
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, resp.Msg.GetLoadBalancer().GetId())
	}
	req := &v1.ListLoadBalancersRequest{TenantId: tn.ID, PageSize: 3}
	var got []string
	for lb, err := range sdk.LoadBalancerPages(t.Context(), c.LoadBalancers, req) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, lb.GetId())
	}
	if fmt.Sprint(got) != fmt.Sprint(want) || req.GetPageToken() != "" {
		t.Fatalf("got %v, want %v (request token %q)", got, want, req.GetPageToken())
	}
	n := 0
	for range sdk.LoadBalancerPages(t.Context(), c.LoadBalancers, req) {
		if n++; n == 4 {
			break
		}
	}
	bad := &v1.ListLoadBalancersRequest{TenantId: tn.ID, PageSize: 3000}
	for _, err := range sdk.LoadBalancerPages(t.Context(), c.LoadBalancers, bad) {
		if pe, ok := sdk.AsError(err); !ok || pe.Code != sdk.InvalidInput || pe.Field != "pageSize" {
			t.Fatalf("pageSize 3000: %v", err)
		}
	}
}

// countingTransport counts the requests a client sends.
type countingTransport struct{ n atomic.Int64 }

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return http.DefaultTransport.RoundTrip(r)
}

// keys turns an iterator of items into one of their identities.
func keys[T any](seq iter.Seq2[T, error], key func(T) string) iter.Seq2[string, error] {
	return func(yield func(string, error) bool) {
		for it, err := range seq {
			var k string
			if err == nil {
				k = key(it)
			}
			if !yield(k, err) {
				return
			}
		}
	}
}

func idOf[T interface{ GetId() string }](v T) string { return v.GetId() }

// TestEveryListIterator: every list's iterator, at one item a page, yields the list's default
// answer item for item with one request a page; without a page size it sends one request.
func TestEveryListIterator(t *testing.T) {
	s := apptest.Start(t)
	tn := s.NewTenant(t, "iter", "admin")
	ctx, q := context.Background(), s.App.DB.Q()
	for i := range 3 {
		for _, err := range []error{
			func() error {
				_, err := store.InsertLoadBalancer(ctx, q, store.LoadBalancer{ID: ids.New(ids.LoadBalancer), TenantID: tn.ID, PoolID: tn.PoolID,
					AccountID: tn.AccountID, Name: fmt.Sprintf("lb-%d", i), Scope: "regional", Region: "nyc3", Spec: []byte(`{}`)})
				return err
			}(),
			func() error {
				_, err := store.InsertInstance(ctx, q, store.Instance{ID: ids.New(ids.Instance), TenantID: tn.ID, PoolID: tn.PoolID,
					AccountID: tn.AccountID, Name: fmt.Sprintf("vm-%d", i), Region: "nyc3", Flavor: "small"})
				return err
			}(),
			func() error {
				n, err := store.InsertNetwork(ctx, q, store.Network{ID: ids.New(ids.Network), TenantID: tn.ID, AccountID: tn.AccountID, Name: fmt.Sprintf("n-%d", i)})
				if err != nil {
					return err
				}
				_, err = store.InsertSubnet(ctx, q, store.Subnet{ID: ids.New(ids.Subnet), TenantID: tn.ID, NetworkID: n.ID, AccountID: tn.AccountID,
					Name: fmt.Sprintf("s-%d", i), Region: "nyc3", IPRange: fmt.Sprintf("10.%d.0.0/24", i)})
				return err
			}(),
			func() error {
				_, err := store.InsertCertificate(ctx, q, store.Certificate{ID: ids.New(ids.Certificate), TenantID: tn.ID, AccountID: tn.AccountID,
					Name: fmt.Sprintf("c-%d", i), Kind: "managed", DNSNames: []string{"a.example.com"}})
				return err
			}(),
			func() error {
				a, err := store.InsertAccount(ctx, q, store.Account{ID: ids.New(ids.Account), TenantID: tn.ID, Kind: "digitalocean", Name: fmt.Sprintf("a-%d", i), TokenSealed: []byte("x")})
				if err != nil {
					return err
				}
				p, err := store.InsertPool(ctx, q, store.Pool{ID: ids.New(ids.Pool), TenantID: tn.ID, AccountID: a.ID, Name: fmt.Sprintf("p-%d", i), Regions: []string{"nyc3"}, Policy: []byte(`{}`)})
				if err != nil {
					return err
				}
				if _, err := store.SetQuota(ctx, q, store.Quota{PoolID: p.ID, TenantID: tn.ID, Resource: "instances", Limit: 1}); err != nil {
					return err
				}
				_, err = store.InsertSubstrate(ctx, q, store.Substrate{ID: ids.New(ids.Substrate), TenantID: tn.ID, PoolID: p.ID, JoinTokenHash: []byte(p.ID), JoinTokenSealed: []byte("x")})
				return err
			}(),
			func() error {
				_, err := store.InsertMetalNode(ctx, q, store.MetalNode{ID: ids.New(ids.MetalNode), TenantID: tn.ID, Name: fmt.Sprintf("m-%d", i), State: "enrolled",
					BMCAddress: fmt.Sprintf("192.0.2.%d", i+1), BMCPort: 443, BMCProtocol: "redfish", BMCUsername: "u", BMCPasswordSealed: []byte("x")})
				return err
			}(),
			func() error {
				_, err := store.InsertPrincipal(ctx, q, store.Principal{ID: ids.New(ids.Principal), TenantID: tn.ID, Kind: "user", DisplayName: "p"})
				return err
			}(),
			func() error {
				_, err := store.InsertProject(ctx, q, store.Project{ID: ids.New(ids.Project), TenantID: tn.ID, Name: fmt.Sprintf("prj-%d", i)})
				return err
			}(),
			func() error {
				_, err := store.InsertTenant(ctx, q, store.Tenant{ID: fmt.Sprintf("iter-%d", i), DisplayName: "t"})
				return err
			}(),
			store.StartUsage(ctx, q, store.UsageRecord{ID: ids.New(ids.UsageRecord), TenantID: tn.ID, Meter: "vps.load-balancer.hours", ResourceID: ids.New(ids.LoadBalancer)}),
		} {
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	rt := &countingTransport{}
	h := &http.Client{Transport: rt}
	c := sdk.New(s.App.URL, tn.Token, sdk.WithHTTPClient(h))
	admin := sdk.New(s.App.URL, s.AdminToken, sdk.WithHTTPClient(h))
	id := tn.ID
	cases := map[string]func(ctx context.Context, size int32) iter.Seq2[string, error]{
		"loadBalancers": func(ctx context.Context, n int32) iter.Seq2[string, error] {
			return keys(sdk.LoadBalancerPages(ctx, c.LoadBalancers, &v1.ListLoadBalancersRequest{TenantId: id, PageSize: n}), idOf)
		},
		"instances": func(ctx context.Context, n int32) iter.Seq2[string, error] {
			return keys(sdk.InstancePages(ctx, c.Instances, &v1.ListInstancesRequest{TenantId: id, PageSize: n}), idOf)
		},
		"networks": func(ctx context.Context, n int32) iter.Seq2[string, error] {
			return keys(sdk.NetworkPages(ctx, c.Networks, &v1.ListNetworksRequest{TenantId: id, PageSize: n}), idOf)
		},
		"subnets": func(ctx context.Context, n int32) iter.Seq2[string, error] {
			return keys(sdk.SubnetPages(ctx, c.Networks, &v1.ListSubnetsRequest{TenantId: id, PageSize: n}), idOf)
		},
		"certificates": func(ctx context.Context, n int32) iter.Seq2[string, error] {
			return keys(sdk.CertificatePages(ctx, c.Certificates, &v1.ListCertificatesRequest{TenantId: id, PageSize: n}), idOf)
		},
		"providerAccounts": func(ctx context.Context, n int32) iter.Seq2[string, error] {
			return keys(sdk.ProviderAccountPages(ctx, c.ProviderAccounts, &v1.ListProviderAccountsRequest{TenantId: id, PageSize: n}), idOf)
		},
		"pools": func(ctx context.Context, n int32) iter.Seq2[string, error] {
			return keys(sdk.PoolPages(ctx, c.Pools, &v1.ListPoolsRequest{TenantId: id, PageSize: n}), idOf)
		},
		"quotas": func(ctx context.Context, n int32) iter.Seq2[string, error] {
			return keys(sdk.QuotaPages(ctx, c.Pools, &v1.ListQuotasRequest{TenantId: id, PageSize: n}),
				func(q *v1.Quota) string { return q.GetPoolId() + "/" + q.GetResource() })
		},
		"substrates": func(ctx context.Context, n int32) iter.Seq2[string, error] {
			return keys(sdk.SubstratePages(ctx, c.Substrates, &v1.ListSubstratesRequest{TenantId: id, PageSize: n}), idOf)
		},
		"metal": func(ctx context.Context, n int32) iter.Seq2[string, error] {
			return keys(sdk.NodePages(ctx, c.Metal, &v1.ListNodesRequest{TenantId: id, PageSize: n}), idOf)
		},
		"tenants": func(ctx context.Context, n int32) iter.Seq2[string, error] {
			return keys(sdk.TenantPages(ctx, admin.Tenants, &v1.ListTenantsRequest{PageSize: n}), idOf)
		},
		"principals": func(ctx context.Context, n int32) iter.Seq2[string, error] {
			return keys(sdk.PrincipalPages(ctx, c.Tenants, &v1.ListPrincipalsRequest{TenantId: id, PageSize: n}), idOf)
		},
		"projects": func(ctx context.Context, n int32) iter.Seq2[string, error] {
			return keys(sdk.ProjectPages(ctx, c.Projects, &v1.ListProjectsRequest{TenantId: id, PageSize: n}), idOf)
		},
		"usage": func(ctx context.Context, n int32) iter.Seq2[string, error] {
			return keys(sdk.UsagePages(ctx, c.Usage, &v1.ListUsageRequest{TenantId: id, PageSize: n}),
				func(u *v1.UsageRecord) string { return u.GetResourceId() })
		},
	}
	walk := func(seq iter.Seq2[string, error]) ([]string, int64) {
		t.Helper()
		before := rt.n.Load()
		var out []string
		for k, err := range seq {
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, k)
		}
		return out, rt.n.Load() - before
	}
	for name, list := range cases {
		t.Run(name, func(t *testing.T) {
			once, calls := walk(list(t.Context(), 0))
			if calls != 1 || len(once) < 3 {
				t.Fatalf("default answer: %d items in %d requests", len(once), calls)
			}
			paged, calls := walk(list(t.Context(), 1))
			if fmt.Sprint(paged) != fmt.Sprint(once) || calls != int64(len(once)) {
				t.Fatalf("pages of 1: %v in %d requests, default answer %v", paged, calls, once)
			}
			before := rt.n.Load()
			for range list(t.Context(), 1) {
				break
			}
			if n := rt.n.Load() - before; n != 1 {
				t.Fatalf("breaking after the first item sent %d requests", n)
			}
		})
	}
}
