package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"

	v1 "better-compute.dev/compute/gen/go/bettercompute/compute/v1"
)

// The platform admin's commands: tenants, provider accounts, pools and quotas. Tenants read their
// own accounts, pools and quotas with the same commands.

func tenantCommands() []command {
	return []command{
		{name: "create", summary: "make a tenant: bcctl tenants create ID [--display-name NAME]", run: tenantCreate},
		{name: "list", summary: "list tenants", run: tenantList},
		{name: "get", summary: "show a tenant: bcctl tenants get ID", run: tenantGet},
	}
}

func tenantCreate(ctx context.Context, c *cli, args []string) error {
	fs := c.flags("tenants create", "bcctl tenants create TENANT_ID [--display-name NAME]")
	display := fs.String("display-name", "", "the display name")
	pos, err := c.parseVerb(fs, args, "TENANT_ID")
	if err != nil {
		return err
	}
	client, _, err := c.client(false)
	if err != nil {
		return err
	}
	cctx, cancel := c.call(ctx)
	defer cancel()
	resp, err := client.Tenants.CreateTenant(cctx, connect.NewRequest(&v1.CreateTenantRequest{TenantId: pos[0], DisplayName: *display}))
	if err != nil {
		return err
	}
	return c.printTenants(resp.Msg.GetTenant(), resp.Msg.GetTenant())
}

func tenantList(ctx context.Context, c *cli, args []string) error {
	fs := c.flags("tenants list", "bcctl tenants list")
	if _, err := c.parseVerb(fs, args); err != nil {
		return err
	}
	client, _, err := c.client(false)
	if err != nil {
		return err
	}
	cctx, cancel := c.call(ctx)
	defer cancel()
	resp, err := client.Tenants.ListTenants(cctx, connect.NewRequest(&v1.ListTenantsRequest{}))
	if err != nil {
		return err
	}
	return c.printTenants(resp.Msg, resp.Msg.GetTenants()...)
}

func tenantGet(ctx context.Context, c *cli, args []string) error {
	fs := c.flags("tenants get", "bcctl tenants get TENANT_ID")
	pos, err := c.parseVerb(fs, args, "TENANT_ID")
	if err != nil {
		return err
	}
	client, _, err := c.client(false)
	if err != nil {
		return err
	}
	cctx, cancel := c.call(ctx)
	defer cancel()
	resp, err := client.Tenants.GetTenant(cctx, connect.NewRequest(&v1.GetTenantRequest{TenantId: pos[0]}))
	if err != nil {
		return err
	}
	return c.printTenants(resp.Msg.GetTenant(), resp.Msg.GetTenant())
}

func (c *cli) printTenants(doc proto.Message, tenants ...*v1.Tenant) error {
	if c.output == "json" {
		return writeJSON(c.env.Stdout, doc)
	}
	rows := make([][]string, 0, len(tenants))
	for _, t := range tenants {
		rows = append(rows, []string{t.GetId(), t.GetDisplayName(), ts(t.GetCreateTime())})
	}
	return writeTable(c.env.Stdout, []string{"ID", "DISPLAY NAME", "CREATED"}, rows)
}

func accountCommands() []command {
	return []command{
		{name: "create", summary: "make a provider account (token from --token-file or $BC_PROVIDER_TOKEN)", run: accountCreate},
		{name: "list", summary: "list the tenant's provider accounts", run: accountList},
		{name: "get", summary: "show a provider account", run: accountGet},
	}
}

func accountCreate(ctx context.Context, c *cli, args []string) error {
	fs := c.flags("accounts create", `bcctl accounts create --name NAME --token-file PATH [--kind digitalocean] [--api-url URL]

The provider token is read from --token-file (- for standard input) or $BC_PROVIDER_TOKEN, never
from a flag; it is stored sealed and never shown again.`)
	name := fs.String("name", "", "the account's name")
	kind := fs.String("kind", "digitalocean", "the provider")
	tokenFile := fs.String("token-file", "", "a file holding the provider token, - for standard input")
	apiURL := fs.String("api-url", "", "the provider API's base URL (a simulator; default the provider's own)")
	if _, err := c.parseVerb(fs, args); err != nil {
		return err
	}
	token := c.env.Getenv("BC_PROVIDER_TOKEN")
	if *tokenFile != "" {
		var raw []byte
		var err error
		if *tokenFile == "-" {
			raw, err = readAll(c.env.Stdin)
		} else {
			raw, err = os.ReadFile(*tokenFile)
		}
		if err != nil {
			return fmt.Errorf("read the provider token: %w", err)
		}
		token = strings.TrimSpace(string(raw))
	}
	client, tenant, err := c.client(true)
	if err != nil {
		return err
	}
	cctx, cancel := c.call(ctx)
	defer cancel()
	resp, err := client.ProviderAccounts.CreateProviderAccount(cctx, connect.NewRequest(&v1.CreateProviderAccountRequest{
		TenantId: tenant, Kind: *kind, Name: *name, Token: token, ApiUrl: *apiURL,
	}))
	if err != nil {
		return err
	}
	return c.printAccounts(resp.Msg.GetAccount(), resp.Msg.GetAccount())
}

func accountList(ctx context.Context, c *cli, args []string) error {
	fs := c.flags("accounts list", "bcctl accounts list")
	if _, err := c.parseVerb(fs, args); err != nil {
		return err
	}
	client, tenant, err := c.client(true)
	if err != nil {
		return err
	}
	cctx, cancel := c.call(ctx)
	defer cancel()
	resp, err := client.ProviderAccounts.ListProviderAccounts(cctx, connect.NewRequest(&v1.ListProviderAccountsRequest{TenantId: tenant}))
	if err != nil {
		return err
	}
	return c.printAccounts(resp.Msg, resp.Msg.GetAccounts()...)
}

func accountGet(ctx context.Context, c *cli, args []string) error {
	fs := c.flags("accounts get", "bcctl accounts get ACCOUNT_ID")
	pos, err := c.parseVerb(fs, args, "ACCOUNT_ID")
	if err != nil {
		return err
	}
	client, tenant, err := c.client(true)
	if err != nil {
		return err
	}
	cctx, cancel := c.call(ctx)
	defer cancel()
	resp, err := client.ProviderAccounts.GetProviderAccount(cctx, connect.NewRequest(&v1.GetProviderAccountRequest{TenantId: tenant, AccountId: pos[0]}))
	if err != nil {
		return err
	}
	return c.printAccounts(resp.Msg.GetAccount(), resp.Msg.GetAccount())
}

func (c *cli) printAccounts(doc proto.Message, as ...*v1.ProviderAccount) error {
	if c.output == "json" {
		return writeJSON(c.env.Stdout, doc)
	}
	rows := make([][]string, 0, len(as))
	for _, a := range as {
		rows = append(rows, []string{a.GetId(), a.GetName(), a.GetKind(), strconv.FormatBool(a.GetTokenSet()), ts(a.GetCreateTime())})
	}
	return writeTable(c.env.Stdout, []string{"ID", "NAME", "KIND", "TOKEN SET", "CREATED"}, rows)
}

func poolCommands() []command {
	return []command{
		{name: "create", summary: "make a pool on an account", run: poolCreate},
		{name: "list", summary: "list the tenant's pools", run: poolList},
		{name: "get", summary: "show a pool", run: poolGet},
		{name: "update", summary: "replace a pool's policy (flavors, image)", run: poolUpdate},
		{name: "archive", summary: "archive a pool", run: poolArchive},
	}
}

// policyFlags are a pool policy's flags.
type policyFlags struct {
	flavors multi
	image   *string
}

func (p *policyFlags) register(fs *flag.FlagSet) {
	fs.Var(&p.flavors, "flavor", "a flavor name=providerSize[:count] (repeatable), e.g. small=s-1vcpu-1gb")
	p.image = fs.String("image", "", "the machine image")
}

func (p *policyFlags) policy() (*v1.PoolPolicy, error) {
	pol := &v1.PoolPolicy{Image: *p.image}
	for _, f := range p.flavors {
		name, rest, ok := strings.Cut(f, "=")
		if !ok {
			return nil, usagef("--flavor %q: want name=providerSize[:count]", f)
		}
		size, count, _ := strings.Cut(rest, ":")
		fl := &v1.Flavor{Name: name, Size: size}
		if count != "" {
			n, err := strconv.ParseInt(count, 10, 32)
			if err != nil {
				return nil, usagef("--flavor %q: the count is a number", f)
			}
			fl.Count = int32(n)
		}
		pol.Flavors = append(pol.Flavors, fl)
	}
	return pol, nil
}

func poolCreate(ctx context.Context, c *cli, args []string) error {
	fs := c.flags("pools create", "bcctl pools create --account ACCOUNT_ID --name NAME --region R [--region R...] [--flavor name=size...] [--image IMAGE]")
	account := fs.String("account", "", "the provider account id")
	name := fs.String("name", "", "the pool's name")
	var regions multi
	fs.Var(&regions, "region", "a region the pool offers (repeatable, or comma separated)")
	var pf policyFlags
	pf.register(fs)
	if _, err := c.parseVerb(fs, args); err != nil {
		return err
	}
	pol, err := pf.policy()
	if err != nil {
		return err
	}
	client, tenant, err := c.client(true)
	if err != nil {
		return err
	}
	var rs []string
	for _, r := range regions {
		rs = append(rs, strings.Split(r, ",")...)
	}
	cctx, cancel := c.call(ctx)
	defer cancel()
	resp, err := client.Pools.CreatePool(cctx, connect.NewRequest(&v1.CreatePoolRequest{TenantId: tenant, AccountId: *account, Name: *name, Regions: rs, Policy: pol}))
	if err != nil {
		return err
	}
	return c.printPools(resp.Msg.GetPool(), resp.Msg.GetPool())
}

func poolList(ctx context.Context, c *cli, args []string) error {
	fs := c.flags("pools list", "bcctl pools list")
	if _, err := c.parseVerb(fs, args); err != nil {
		return err
	}
	client, tenant, err := c.client(true)
	if err != nil {
		return err
	}
	cctx, cancel := c.call(ctx)
	defer cancel()
	resp, err := client.Pools.ListPools(cctx, connect.NewRequest(&v1.ListPoolsRequest{TenantId: tenant}))
	if err != nil {
		return err
	}
	return c.printPools(resp.Msg, resp.Msg.GetPools()...)
}

func poolGet(ctx context.Context, c *cli, args []string) error {
	fs := c.flags("pools get", "bcctl pools get POOL_ID")
	pos, err := c.parseVerb(fs, args, "POOL_ID")
	if err != nil {
		return err
	}
	client, tenant, err := c.client(true)
	if err != nil {
		return err
	}
	cctx, cancel := c.call(ctx)
	defer cancel()
	resp, err := client.Pools.GetPool(cctx, connect.NewRequest(&v1.GetPoolRequest{TenantId: tenant, PoolId: pos[0]}))
	if err != nil {
		return err
	}
	return c.printPools(resp.Msg.GetPool(), resp.Msg.GetPool())
}

func poolUpdate(ctx context.Context, c *cli, args []string) error {
	fs := c.flags("pools update", "bcctl pools update POOL_ID [--flavor name=size...] [--image IMAGE]  (the policy given replaces the old one)")
	var pf policyFlags
	pf.register(fs)
	pos, err := c.parseVerb(fs, args, "POOL_ID")
	if err != nil {
		return err
	}
	pol, err := pf.policy()
	if err != nil {
		return err
	}
	client, tenant, err := c.client(true)
	if err != nil {
		return err
	}
	cctx, cancel := c.call(ctx)
	defer cancel()
	resp, err := client.Pools.UpdatePool(cctx, connect.NewRequest(&v1.UpdatePoolRequest{TenantId: tenant, PoolId: pos[0], Policy: pol}))
	if err != nil {
		return err
	}
	return c.printPools(resp.Msg.GetPool(), resp.Msg.GetPool())
}

func poolArchive(ctx context.Context, c *cli, args []string) error {
	fs := c.flags("pools archive", "bcctl pools archive POOL_ID")
	pos, err := c.parseVerb(fs, args, "POOL_ID")
	if err != nil {
		return err
	}
	client, tenant, err := c.client(true)
	if err != nil {
		return err
	}
	cctx, cancel := c.call(ctx)
	defer cancel()
	resp, err := client.Pools.ArchivePool(cctx, connect.NewRequest(&v1.ArchivePoolRequest{TenantId: tenant, PoolId: pos[0]}))
	if err != nil {
		return err
	}
	return c.printPools(resp.Msg.GetPool(), resp.Msg.GetPool())
}

func (c *cli) printPools(doc proto.Message, ps ...*v1.Pool) error {
	if c.output == "json" {
		return writeJSON(c.env.Stdout, doc)
	}
	rows := make([][]string, 0, len(ps))
	for _, p := range ps {
		var fl []string
		for _, f := range p.GetPolicy().GetFlavors() {
			fl = append(fl, f.GetName()+"="+f.GetSize())
		}
		rows = append(rows, []string{p.GetId(), p.GetName(), p.GetState(), p.GetAccountId(), strings.Join(p.GetRegions(), ","), strings.Join(fl, ",")})
	}
	return writeTable(c.env.Stdout, []string{"ID", "NAME", "STATE", "ACCOUNT", "REGIONS", "FLAVORS"}, rows)
}

func quotaCommands() []command {
	return []command{
		{name: "set", summary: "set a pool's quota: bcctl quotas set --pool ID --resource loadBalancers --limit N", run: quotaSet},
		{name: "list", summary: "list the tenant's quotas with their use", run: quotaList},
	}
}

func quotaSet(ctx context.Context, c *cli, args []string) error {
	fs := c.flags("quotas set", "bcctl quotas set --pool POOL_ID --resource loadBalancers|instances --limit N")
	pool := fs.String("pool", "", "the pool id")
	resource := fs.String("resource", "", "loadBalancers or instances")
	limit := fs.Int64("limit", -1, "the limit")
	if _, err := c.parseVerb(fs, args); err != nil {
		return err
	}
	if *limit < 0 {
		return usagef("quotas set: give --limit N (0 or more)")
	}
	client, tenant, err := c.client(true)
	if err != nil {
		return err
	}
	cctx, cancel := c.call(ctx)
	defer cancel()
	resp, err := client.Pools.SetQuota(cctx, connect.NewRequest(&v1.SetQuotaRequest{TenantId: tenant, PoolId: *pool, Resource: *resource, Limit: *limit}))
	if err != nil {
		return err
	}
	return c.printQuotas(resp.Msg.GetQuota(), resp.Msg.GetQuota())
}

func quotaList(ctx context.Context, c *cli, args []string) error {
	fs := c.flags("quotas list", "bcctl quotas list [--pool POOL_ID]")
	pool := fs.String("pool", "", "only this pool's")
	if _, err := c.parseVerb(fs, args); err != nil {
		return err
	}
	client, tenant, err := c.client(true)
	if err != nil {
		return err
	}
	cctx, cancel := c.call(ctx)
	defer cancel()
	resp, err := client.Pools.ListQuotas(cctx, connect.NewRequest(&v1.ListQuotasRequest{TenantId: tenant, PoolId: *pool}))
	if err != nil {
		return err
	}
	return c.printQuotas(resp.Msg, resp.Msg.GetQuotas()...)
}

func (c *cli) printQuotas(doc proto.Message, qs ...*v1.Quota) error {
	if c.output == "json" {
		return writeJSON(c.env.Stdout, doc)
	}
	rows := make([][]string, 0, len(qs))
	for _, q := range qs {
		rows = append(rows, []string{q.GetPoolId(), q.GetResource(), strconv.FormatInt(q.GetUsed(), 10), strconv.FormatInt(q.GetLimit(), 10)})
	}
	return writeTable(c.env.Stdout, []string{"POOL", "RESOURCE", "USED", "LIMIT"}, rows)
}
