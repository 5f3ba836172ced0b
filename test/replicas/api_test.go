package replicas_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"connectrpc.com/connect"

	v1 "better-compute.dev/compute/gen/go/bettercompute/compute/v1"
	c "better-compute.dev/compute/gen/go/bettercompute/compute/v1/computev1connect"
)

// httpClient is shared by the API calls; a call to a paused replica would wait, so the test
// only calls replicas that run.
var httpClient = &http.Client{Timeout: 30 * time.Second}

// api calls one replica's Connect API with a bearer token.
type api struct {
	tenants   c.TenantServiceClient
	accounts  c.ProviderAccountServiceClient
	pools     c.PoolServiceClient
	instances c.InstanceServiceClient
	lbs       c.LoadBalancerServiceClient
}

func newAPI(baseURL string) api {
	return api{
		tenants:   c.NewTenantServiceClient(httpClient, baseURL),
		accounts:  c.NewProviderAccountServiceClient(httpClient, baseURL),
		pools:     c.NewPoolServiceClient(httpClient, baseURL),
		instances: c.NewInstanceServiceClient(httpClient, baseURL),
		lbs:       c.NewLoadBalancerServiceClient(httpClient, baseURL),
	}
}

// call sends msg with token and fails the test on an error.
func call[Req, Res any](t *testing.T, token string, fn func(context.Context, *connect.Request[Req]) (*connect.Response[Res], error), msg *Req) *Res {
	t.Helper()
	res, err := try(token, fn, msg)
	if err != nil {
		t.Fatalf("%T: %v", msg, err)
	}
	return res
}

// try sends msg with token.
func try[Req, Res any](token string, fn func(context.Context, *connect.Request[Req]) (*connect.Response[Res], error), msg *Req) (*Res, error) {
	req := connect.NewRequest(msg)
	req.Header().Set("Authorization", "Bearer "+token)
	res, err := fn(context.Background(), req)
	if err != nil {
		return nil, err
	}
	return res.Msg, nil
}

// tenantSetup is what the admin makes for the test's tenant.
type tenantSetup struct {
	tenantID, token, poolID string
}

// setUpTenant makes the tenant, an editor principal with a token, an account on the simulator
// (api_url), a pool with one flavor, and quotas, all through the admin token.
func setUpTenant(t *testing.T, a api, adminToken, tenantID, providerToken, simURL string, lbQuota int64) tenantSetup {
	t.Helper()
	call(t, adminToken, a.tenants.CreateTenant, &v1.CreateTenantRequest{TenantId: tenantID, DisplayName: tenantID})
	p := call(t, adminToken, a.tenants.CreatePrincipal, &v1.CreatePrincipalRequest{TenantId: tenantID, Kind: "user", DisplayName: "operator"})
	call(t, adminToken, a.tenants.GrantRole, &v1.GrantRoleRequest{TenantId: tenantID, PrincipalId: p.GetPrincipal().GetId(), Role: "editor"})
	tok := call(t, adminToken, a.tenants.CreateToken, &v1.CreateTokenRequest{TenantId: tenantID, PrincipalId: p.GetPrincipal().GetId()})
	acct := call(t, adminToken, a.accounts.CreateProviderAccount, &v1.CreateProviderAccountRequest{
		TenantId: tenantID, Kind: "digitalocean", Name: "main", Token: providerToken, ApiUrl: simURL,
	})
	pool := call(t, adminToken, a.pools.CreatePool, &v1.CreatePoolRequest{
		TenantId: tenantID, AccountId: acct.GetAccount().GetId(), Name: "main", Regions: []string{"nyc3"},
		Policy: &v1.PoolPolicy{Flavors: []*v1.Flavor{{Name: "small", Size: "s-1vcpu-1gb"}}},
	})
	for res, limit := range map[string]int64{"loadBalancers": lbQuota, "instances": 10} {
		call(t, adminToken, a.pools.SetQuota, &v1.SetQuotaRequest{TenantId: tenantID, PoolId: pool.GetPool().GetId(), Resource: res, Limit: limit})
	}
	return tenantSetup{tenantID: tenantID, token: tok.GetSecret(), poolID: pool.GetPool().GetId()}
}
