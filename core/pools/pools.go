package core

import (
	"context"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/timestamppb"

	"better-compute.dev/compute/apierr"
	"better-compute.dev/compute/authz"
	v1 "better-compute.dev/compute/gen/go/bettercompute/compute/v1"
	"better-compute.dev/compute/ids"
	"better-compute.dev/compute/seal"
	"better-compute.dev/compute/store"
)

// CreateProviderAccount stores an account with its token sealed, bound to the account id.
func (s *Service) CreateProviderAccount(ctx context.Context, r *v1.CreateProviderAccountRequest) (*v1.ProviderAccount, error) {
	c, err := core.RequireCaller(ctx)
	if err != nil {
		return nil, err
	}
	if err := core.RequirePlatformAdmin(c); err != nil {
		return nil, err
	}
	if _, err := store.GetTenant(ctx, s.base.Store.Q(), r.GetTenantId()); err != nil {
		return nil, core.StoreErr(err, "tenant")
	}
	id := ids.New(ids.Account)
	sealed, err := s.base.Keyring.SealSecret(seal.Secret(r.GetToken()), []byte(id))
	if err != nil {
		return nil, apierr.InternalErr(err)
	}
	a, err := store.InsertAccount(ctx, s.base.Store.Q(), store.Account{
		ID: id, TenantID: r.GetTenantId(), Kind: r.GetKind(), Name: r.GetName(), TokenSealed: []byte(sealed), APIURL: r.GetApiUrl(),
	})
	if err != nil {
		return nil, core.StoreErr(err, "provider account")
	}
	return accountProto(a), nil
}

// GetProviderAccount returns an account (never its token).
func (s *Service) GetProviderAccount(ctx context.Context, r *v1.GetProviderAccountRequest) (*v1.ProviderAccount, error) {
	c, err := core.RequireCaller(ctx)
	if err != nil {
		return nil, err
	}
	a, err := store.GetAccount(ctx, s.base.Store.Q(), r.GetAccountId())
	t := core.Target{Type: authz.TypeProviderAccount, ID: r.GetAccountId(), Tenant: r.GetTenantId(), What: "provider account", Field: "accountId"}
	if _, err := s.base.AuthorizeOwned(ctx, c, t, a.TenantID, err, authz.ProviderAccountsRead, ""); err != nil {
		return nil, err
	}
	return accountProto(a), nil
}

// ListProviderAccounts returns the tenant's accounts in creation order
// (ListProviderAccountsPage without the token).
func (s *Service) ListProviderAccounts(ctx context.Context, r *v1.ListProviderAccountsRequest) ([]*v1.ProviderAccount, error) {
	as, _, err := s.ListProviderAccountsPage(ctx, r)
	return as, err
}

// ListProviderAccountsPage returns at most 1000 accounts, or one page, and the next page's token.
func (s *Service) ListProviderAccountsPage(ctx context.Context, r *v1.ListProviderAccountsRequest) ([]*v1.ProviderAccount, string, error) {
	return core.ListPage(ctx, s.base, r, core.Listing[store.Account]{
		Method: "providerAccounts", What: "provider account", Perm: authz.ProviderAccountsRead, Access: core.PlatformReads,
		Tenant: r.GetTenantId(),
		Key:    func(a store.Account) store.Cursor { return core.ByID(a.ID) },
		Query: func(p store.Page) ([]store.Account, error) {
			return store.ListAccounts(ctx, s.base.Store.Q(), r.GetTenantId(), p)
		},
	}, core.Each(core.Infallible(accountProto)))
}

// CreatePool makes a pool on an account of the tenant.
func (s *Service) CreatePool(ctx context.Context, r *v1.CreatePoolRequest) (*v1.Pool, error) {
	c, err := core.RequireCaller(ctx)
	if err != nil {
		return nil, err
	}
	if err := core.RequirePlatformAdmin(c); err != nil {
		return nil, err
	}
	a, err := store.GetAccount(ctx, s.base.Store.Q(), r.GetAccountId())
	if err := core.RefErr(err, a.TenantID == r.GetTenantId(), apierr.NotFoundf("provider account %s not found", r.GetAccountId())); err != nil {
		return nil, core.StoreErr(err, "provider account")
	}
	policy, err := marshalPolicy(r.GetPolicy())
	if err != nil {
		return nil, err
	}
	var p store.Pool
	err = s.base.Store.ExecuteTx(ctx, func(tx store.Tx) error {
		var err error
		p, err = store.InsertPool(ctx, tx, store.Pool{
			ID: ids.New(ids.Pool), TenantID: r.GetTenantId(), AccountID: a.ID, Name: r.GetName(), Regions: r.GetRegions(), Policy: policy,
		})
		if err != nil {
			return err
		}
		// A policy with a substrate records it and queues the kubernetes.substrates reconciler.
		return s.followSubstrate(ctx, tx, p, r.GetPolicy())
	})
	if err != nil {
		return nil, core.StoreErr(err, "pool")
	}
	return poolProto(p)
}

// GetPool returns one pool of the tenant.
func (s *Service) GetPool(ctx context.Context, r *v1.GetPoolRequest) (*v1.Pool, error) {
	c, err := core.RequireCaller(ctx)
	if err != nil {
		return nil, err
	}
	p, err := store.GetPool(ctx, s.base.Store.Q(), r.GetPoolId())
	t := core.Target{Type: authz.TypePool, ID: r.GetPoolId(), Tenant: r.GetTenantId(), What: "pool", Field: "poolId"}
	if _, err := s.base.AuthorizeOwned(ctx, c, t, p.TenantID, err, authz.PoolsRead, ""); err != nil {
		return nil, err
	}
	return poolProto(p)
}

// ListPools returns the tenant's pools in creation order (ListPoolsPage without the token).
func (s *Service) ListPools(ctx context.Context, r *v1.ListPoolsRequest) ([]*v1.Pool, error) {
	ps, _, err := s.ListPoolsPage(ctx, r)
	return ps, err
}

// ListPoolsPage returns at most 1000 pools, or one page, and the next page's token.
func (s *Service) ListPoolsPage(ctx context.Context, r *v1.ListPoolsRequest) ([]*v1.Pool, string, error) {
	return core.ListPage(ctx, s.base, r, core.Listing[store.Pool]{
		Method: "pools", What: "pool", Perm: authz.PoolsRead, Access: core.PlatformReads, Tenant: r.GetTenantId(),
		Key: func(p store.Pool) store.Cursor { return core.ByID(p.ID) },
		Query: func(p store.Page) ([]store.Pool, error) {
			return store.ListPools(ctx, s.base.Store.Q(), r.GetTenantId(), p)
		},
	}, core.Each(poolProto))
}

// UpdatePool replaces a pool's policy (the substrate reconciler follows it).
func (s *Service) UpdatePool(ctx context.Context, r *v1.UpdatePoolRequest) (*v1.Pool, error) {
	return s.changePool(ctx, r.GetTenantId(), r.GetPoolId(), r.GetPolicy(), "")
}

// ArchivePool archives a pool: nothing new is made in it.
func (s *Service) ArchivePool(ctx context.Context, r *v1.ArchivePoolRequest) (*v1.Pool, error) {
	return s.changePool(ctx, r.GetTenantId(), r.GetPoolId(), nil, "archived")
}

func (s *Service) changePool(ctx context.Context, tenantID, poolID string, policy *v1.PoolPolicy, state string) (*v1.Pool, error) {
	c, err := core.RequireCaller(ctx)
	if err != nil {
		return nil, err
	}
	if err := core.RequirePlatformAdmin(c); err != nil {
		return nil, err
	}
	p, err := store.GetPool(ctx, s.base.Store.Q(), poolID)
	if err := core.RefErr(err, p.TenantID == tenantID, apierr.NotFoundf("pool %s not found", poolID)); err != nil {
		return nil, core.StoreErr(err, "pool")
	}
	if p.State == "archived" {
		return nil, apierr.State("archived", "pool %s is archived", poolID)
	}
	raw := p.Policy
	if policy != nil {
		if raw, err = marshalPolicy(policy); err != nil {
			return nil, err
		}
	}
	if state == "" {
		state = p.State
	}
	err = s.base.Store.ExecuteTx(ctx, func(tx store.Tx) error {
		var err error
		if p, err = store.UpdatePool(ctx, tx, poolID, raw, state); err != nil {
			return err
		}
		// The substrate follows the new policy or the archive, in this same transaction.
		effective := &v1.PoolPolicy{}
		if err := core.StoredJSON.Unmarshal(p.Policy, effective); err != nil {
			return apierr.InternalErr(err)
		}
		return s.followSubstrate(ctx, tx, p, effective)
	})
	if err != nil {
		return nil, core.StoreErr(err, "pool")
	}
	return poolProto(p)
}

// SetQuota sets one quota row (platform admins).
func (s *Service) SetQuota(ctx context.Context, r *v1.SetQuotaRequest) (*v1.Quota, error) {
	c, err := core.RequireCaller(ctx)
	if err != nil {
		return nil, err
	}
	if err := core.RequirePlatformAdmin(c); err != nil {
		return nil, err
	}
	if _, err := store.GetTenant(ctx, s.base.Store.Q(), r.GetTenantId()); err != nil {
		return nil, core.StoreErr(err, "tenant")
	}
	if _, err := store.GetPool(ctx, s.base.Store.Q(), r.GetPoolId()); err != nil {
		return nil, core.StoreErr(err, "pool")
	}
	q, err := store.SetQuota(ctx, s.base.Store.Q(), store.Quota{PoolID: r.GetPoolId(), TenantID: r.GetTenantId(), Resource: r.GetResource(), Limit: r.GetLimit()})
	if err != nil {
		return nil, core.StoreErr(err, "quota")
	}
	return quotaProto(q), nil
}

// ListQuotas returns the tenant's quota rows by pool and resource, all of them (ListQuotasPage
// without the token).
func (s *Service) ListQuotas(ctx context.Context, r *v1.ListQuotasRequest) ([]*v1.Quota, error) {
	qs, _, err := s.ListQuotasPage(ctx, r)
	return qs, err
}

// ListQuotasPage returns every quota row, or one page, and the next page's token.
func (s *Service) ListQuotasPage(ctx context.Context, r *v1.ListQuotasRequest) ([]*v1.Quota, string, error) {
	return core.ListPage(ctx, s.base, r, core.Listing[store.Quota]{
		Method: "quotas", What: "quota", Perm: authz.PoolsRead, Access: core.PlatformReads, Tenant: r.GetTenantId(),
		Filters: []string{r.GetPoolId()}, Default: store.NoLimit,
		Key: func(q store.Quota) store.Cursor { return store.Cursor{ID: q.PoolID, Second: q.Resource} },
		Query: func(p store.Page) ([]store.Quota, error) {
			return store.ListQuotasPage(ctx, s.base.Store.Q(), r.GetTenantId(), r.GetPoolId(), p)
		},
	}, core.Each(core.Infallible(quotaProto)))
}

func marshalPolicy(p *v1.PoolPolicy) ([]byte, error) {
	if p == nil {
		return []byte("{}"), nil
	}
	b, err := protojson.Marshal(p)
	if err != nil {
		return nil, apierr.InternalErr(err)
	}
	return b, nil
}

func accountProto(a store.Account) *v1.ProviderAccount {
	return &v1.ProviderAccount{Id: a.ID, TenantId: a.TenantID, Kind: a.Kind, Name: a.Name, TokenSet: len(a.TokenSealed) > 0, CreateTime: timestamppb.New(a.CreatedAt)}
}

func poolProto(p store.Pool) (*v1.Pool, error) {
	policy := &v1.PoolPolicy{}
	if err := core.StoredJSON.Unmarshal(p.Policy, policy); err != nil {
		return nil, apierr.InternalErr(err)
	}
	return &v1.Pool{Id: p.ID, TenantId: p.TenantID, AccountId: p.AccountID, Name: p.Name, Regions: p.Regions, Policy: policy, State: p.State, CreateTime: timestamppb.New(p.CreatedAt)}, nil
}

func quotaProto(q store.Quota) *v1.Quota {
	return &v1.Quota{PoolId: q.PoolID, TenantId: q.TenantID, Resource: q.Resource, Limit: q.Limit, Used: q.Used}
}
