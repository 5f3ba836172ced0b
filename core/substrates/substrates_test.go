package substrates_test

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"connectrpc.com/connect"

	"better-compute.dev/compute/apierr"
	"better-compute.dev/compute/app/apptest"
	v1 "better-compute.dev/compute/gen/go/bettercompute/compute/v1"
	"better-compute.dev/compute/gen/go/bettercompute/compute/v1/computev1connect"
	"better-compute.dev/compute/gen/go/bettercompute/compute/v1/errcode"
	"better-compute.dev/compute/store"
)

// substrateStack is a stack with a tenant whose pool has a create substrate, its node pool
// recorded as the reconciler would, and the join token opened from its sealed form.
func substrateStack(t *testing.T) (*apptest.Stack, apptest.Tenant, string) {
	t.Helper()
	s := apptest.Start(t)
	tn := s.NewTenant(t, "acme", "viewer")
	policy := &v1.PoolPolicy{Flavors: []*v1.Flavor{{Name: "small", Size: "s-1vcpu-2gb", Count: 1}},
		Substrate: &v1.PoolSubstrate{Kind: "kubernetes", Account: tn.AccountID,
			Cluster: &v1.SubstrateCluster{Mode: &v1.SubstrateCluster_Create{Create: &v1.ClusterCreate{Region: "nyc3"}}}}}
	if _, err := s.App.Pools.UpdatePool(s.AdminCtx, &v1.UpdatePoolRequest{TenantId: tn.ID, PoolId: tn.PoolID, Policy: policy}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	sub, err := store.GetSubstrateByPool(ctx, s.App.DB.Q(), tn.PoolID)
	if err != nil {
		t.Fatalf("the policy change recorded no substrate: %v", err)
	}
	w, err := store.GetWorkItem(ctx, s.App.DB, "kubernetes.substrates", tn.PoolID)
	if err != nil || w.DueAt == nil {
		t.Fatalf("the policy change queued no reconcile: %+v %v", w, err)
	}
	sub.State, sub.NodePools = "ready", []store.SubstrateNodePool{{Name: "bc-pool-small", Flavor: "small", Size: "s-1vcpu-2gb", Count: 1}}
	if err := store.SaveSubstrate(ctx, s.App.DB.Q(), sub); err != nil {
		t.Fatal(err)
	}
	token, err := s.App.Base.Keyring.OpenSecret(string(sub.JoinTokenSealed), []byte(sub.ID))
	if err != nil {
		t.Fatal(err)
	}
	return s, tn, token.Reveal()
}

// TestJoinNode: the join token admits a node of one of the substrate's node pools; anything
// else is refused, over the API without a bearer token.
func TestJoinNode(t *testing.T) {
	s, tn, token := substrateStack(t)
	client := computev1connect.NewSubstrateJoinServiceClient(http.DefaultClient, s.App.URL)
	join := func(r *v1.JoinNodeRequest) (*v1.JoinNodeResponse, error) {
		resp, err := client.JoinNode(context.Background(), connect.NewRequest(r))
		if err != nil {
			return nil, err
		}
		return resp.Msg, nil
	}
	good := func() *v1.JoinNodeRequest {
		return &v1.JoinNodeRequest{PoolId: tn.PoolID, Token: token, NodeName: "bc-pool-small-abcde", ProviderNodeId: "node-1", NodePool: "bc-pool-small"}
	}
	first, err := join(good())
	if err != nil {
		t.Fatalf("join with the good token: %v", err)
	}
	if first.GetTenantId() != tn.ID || first.GetPoolId() != tn.PoolID || first.GetNode().GetId() == "" {
		t.Errorf("join answered %v: want the node in the tenant's pool", first)
	}
	again, err := join(good())
	if err != nil || again.GetNode().GetId() != first.GetNode().GetId() {
		t.Errorf("joining again: %v %v, want the same node", again, err)
	}
	otherTenant := s.NewTenant(t, "globex", "viewer")
	cases := []struct {
		reason string
		edit   func(*v1.JoinNodeRequest)
		want   connect.Code
	}{
		{"a wrong token", func(r *v1.JoinNodeRequest) { r.Token = token[:len(token)-4] + "AAAA" }, connect.CodeUnauthenticated},
		{"the token of another pool", func(r *v1.JoinNodeRequest) { r.PoolId = otherTenant.PoolID }, connect.CodeUnauthenticated},
		{"a pool that does not exist", func(r *v1.JoinNodeRequest) { r.PoolId = "pool_01j00000000000000000000000" }, connect.CodeUnauthenticated},
		{"a node pool that is not the substrate's", func(r *v1.JoinNodeRequest) { r.NodePool = "tenant-pool" }, connect.CodeInvalidArgument},
		{"a token too short to be one", func(r *v1.JoinNodeRequest) { r.Token = "short" }, connect.CodeInvalidArgument},
		{"a node name that is not a DNS name", func(r *v1.JoinNodeRequest) { r.NodeName = "Not A Name" }, connect.CodeInvalidArgument},
	}
	for _, tc := range cases {
		r := good()
		tc.edit(r)
		_, err := join(r)
		if connect.CodeOf(err) != tc.want {
			t.Errorf("%s: %v, want %v", tc.reason, err, tc.want)
		}
	}
	view, err := s.App.Substrates.GetSubstrate(tn.Ctx, &v1.GetSubstrateRequest{TenantId: tn.ID, PoolId: tn.PoolID})
	if err != nil || len(view.GetNodes()) != 1 || view.GetNodes()[0].GetName() != "bc-pool-small-abcde" {
		t.Errorf("substrate nodes %v %v: want the one joined node", view.GetNodes(), err)
	}
}

// TestSubstrateVisibility: a tenant's principal reads its substrate, over the JSON mapping
// too; another tenant's principal gets NOT_FOUND whichever tenant it names, and cannot list.
func TestSubstrateVisibility(t *testing.T) {
	s, tn, _ := substrateStack(t)
	other := s.NewTenant(t, "globex", "editor")
	status, body := s.PostJSON(t, "/api/compute/substrates/get", tn.Token, map[string]any{"tenantId": tn.ID, "poolId": tn.PoolID})
	sub, _ := body["substrate"].(map[string]any)
	if status != http.StatusOK || sub["poolId"] != tn.PoolID || sub["state"] != "ready" {
		t.Fatalf("substrates/get as the tenant: %d %v", status, body)
	}
	if _, leaks := sub["joinToken"]; leaks {
		t.Error("the substrate view carries a join token")
	}
	cases := []struct {
		reason   string
		tenantID string
		poolID   string
	}{
		{"naming the owner tenant", tn.ID, tn.PoolID},
		{"naming its own tenant", other.ID, tn.PoolID},
		{"its own pool without a substrate", other.ID, other.PoolID},
	}
	for _, tc := range cases {
		_, err := s.App.Substrates.GetSubstrate(other.Ctx, &v1.GetSubstrateRequest{TenantId: tc.tenantID, PoolId: tc.poolID})
		if apierr.CodeOf(err) != errcode.NotFound {
			t.Errorf("%s: %v, want NOT_FOUND", tc.reason, err)
		}
	}
	_, err := s.App.Substrates.ListSubstrates(other.Ctx, &v1.ListSubstratesRequest{TenantId: tn.ID})
	if apierr.CodeOf(err) != errcode.AccessDenied {
		t.Errorf("listing another tenant's substrates: %v, want ACCESS_DENIED", err)
	}
	mine, err := s.App.Substrates.ListSubstrates(tn.Ctx, &v1.ListSubstratesRequest{TenantId: tn.ID})
	if err != nil || len(mine) != 1 || mine[0].GetPoolId() != tn.PoolID {
		t.Errorf("listing its own: %v %v, want the one substrate", mine, err)
	}
	var ae *apierr.Error
	if _, err := s.App.Substrates.GetSubstrate(context.Background(), &v1.GetSubstrateRequest{TenantId: tn.ID, PoolId: tn.PoolID}); !errors.As(err, &ae) || ae.Code != errcode.Unauthenticated {
		t.Errorf("no caller: %v, want UNAUTHENTICATED", err)
	}
}

// TestSubstrateAccountMustBeTheTenants: a policy naming another tenant's account is refused
// and records nothing.
func TestSubstrateAccountMustBeTheTenants(t *testing.T) {
	s := apptest.Start(t)
	tn := s.NewTenant(t, "acme", "viewer")
	other := s.NewTenant(t, "globex", "viewer")
	policy := &v1.PoolPolicy{Substrate: &v1.PoolSubstrate{Kind: "kubernetes", Account: other.AccountID,
		Cluster: &v1.SubstrateCluster{Mode: &v1.SubstrateCluster_Adopt{Adopt: &v1.ClusterAdopt{Id: "c-1"}}}}}
	_, err := s.App.Pools.UpdatePool(s.AdminCtx, &v1.UpdatePoolRequest{TenantId: tn.ID, PoolId: tn.PoolID, Policy: policy})
	if apierr.CodeOf(err) != errcode.NotFound {
		t.Errorf("another tenant's account: %v, want NOT_FOUND", err)
	}
	if _, err := store.GetSubstrateByPool(context.Background(), s.App.DB.Q(), tn.PoolID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a refused policy recorded a substrate: %v", err)
	}
}
