package main

import (
	"context"
	"fmt"
	"io"

	"better-compute.dev/compute/app"
	"better-compute.dev/compute/core"
	v1 "better-compute.dev/compute/gen/go/bettercompute/compute/v1"
	"better-compute.dev/compute/provider/digitalocean/sim"
)

// devInfo is what dev mode prints and writes to --ready-file.
type devInfo struct {
	URL          string `json:"url"`
	Schema       string `json:"schema"`
	AdminToken   string `json:"adminToken"`
	TenantID     string `json:"tenantId"`
	TenantToken  string `json:"tenantToken"`
	PrincipalID  string `json:"principalId"`
	AccountID    string `json:"accountId"`
	PoolID       string `json:"poolId"`
	Region       string `json:"region"`
	SimulatorURL string `json:"simulatorUrl"`
}

// devSimulatorToken is the DigitalOcean token of the demo account; the simulator accepts any.
const devSimulatorToken = "dev-simulator-token"

func startSimulator() (string, func(), error) {
	s := sim.New(sim.Options{AcceptAnyToken: true})
	u, err := s.Start()
	if err != nil {
		return "", nil, err
	}
	return u, func() { s.Close() }, nil
}

// seedDev makes the bootstrap admin and a demo tenant: an editor principal with a token, an
// account on the simulator, a pool in nyc3 with one flavor, and quotas of 10.
func seedDev(ctx context.Context, a *app.App, simURL string) (devInfo, error) {
	adminID, adminToken, err := a.Base.BootstrapAdmin(ctx, "dev-admin")
	if err != nil {
		return devInfo{}, err
	}
	actx := core.WithCaller(ctx, core.Caller{PrincipalID: adminID, PlatformAdmin: true})
	info := devInfo{AdminToken: adminToken, TenantID: "demo", Region: "nyc3", SimulatorURL: simURL}
	if _, err := a.Tenancy.CreateTenant(actx, &v1.CreateTenantRequest{TenantId: info.TenantID, DisplayName: "Demo tenant"}); err != nil {
		return info, err
	}
	p, err := a.Tenancy.CreatePrincipal(actx, &v1.CreatePrincipalRequest{TenantId: info.TenantID, Kind: "user", DisplayName: "demo user"})
	if err != nil {
		return info, err
	}
	info.PrincipalID = p.GetId()
	if err := a.Tenancy.GrantRole(actx, &v1.GrantRoleRequest{TenantId: info.TenantID, PrincipalId: p.GetId(), Role: "editor"}); err != nil {
		return info, err
	}
	if _, info.TenantToken, err = a.Tenancy.CreateToken(actx, &v1.CreateTokenRequest{TenantId: info.TenantID, PrincipalId: p.GetId()}); err != nil {
		return info, err
	}
	acct, err := a.Tenancy.CreateProviderAccount(actx, &v1.CreateProviderAccountRequest{
		TenantId: info.TenantID, Kind: "digitalocean", Name: "demo-do", Token: devSimulatorToken, ApiUrl: simURL,
	})
	if err != nil {
		return info, err
	}
	info.AccountID = acct.GetId()
	pool, err := a.Pools.CreatePool(actx, &v1.CreatePoolRequest{
		TenantId: info.TenantID, AccountId: acct.GetId(), Name: "demo-pool", Regions: []string{info.Region},
		Policy: &v1.PoolPolicy{Flavors: []*v1.Flavor{{Name: "small", Size: "s-1vcpu-1gb"}}},
	})
	if err != nil {
		return info, err
	}
	info.PoolID = pool.GetId()
	for _, res := range []string{"loadBalancers", "instances"} {
		if _, err := a.Pools.SetQuota(actx, &v1.SetQuotaRequest{TenantId: info.TenantID, PoolId: pool.GetId(), Resource: res, Limit: 10}); err != nil {
			return info, err
		}
	}
	return info, nil
}

func printDev(w io.Writer, i devInfo) {
	fmt.Fprintf(w, `Better Compute control plane (dev mode)
  listening        %s   (Connect, gRPC, gRPC-Web, JSON at /api/compute/...)
  admin token      %s
  demo tenant      %s   token %s
  demo pool        %s   (region %s, flavor small, quota 10 load balancers)
  provider account %s   (DigitalOcean simulator at %s)
  database schema  %s   (dropped on exit)
Try:
  curl -s %s/api/compute/loadBalancers/list -H 'Authorization: Bearer %s' -H 'Content-Type: application/json' -d '{"tenantId":"%s"}'
`, i.URL, i.AdminToken, i.TenantID, i.TenantToken, i.PoolID, i.Region, i.AccountID, i.SimulatorURL, i.Schema, i.URL, i.TenantToken, i.TenantID)
}
