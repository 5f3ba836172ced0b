package core

import (
	"context"

	"github.com/jackc/pgx/v5"
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
	c, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	if err := requirePlatformAdmin(c); err != nil {
		return nil, err
	}
	if _, err := store.GetTenant(ctx, s.DB.Q(), r.GetTenantId()); err != nil {
		return nil, storeErr(err, "tenant")
	}
	id := ids.New(ids.Account)
	sealed, err := s.Keyring.SealSecret(seal.Secret(r.GetToken()), []byte(id))
	if err != nil {
		return nil, apierr.InternalErr(err)
	}
	a, err := store.InsertAccount(ctx, s.DB.Q(), store.Account{
		ID: id, TenantID: r.GetTenantId(), Kind: r.GetKind(), Name: r.GetName(), TokenSealed: []byte(sealed), APIURL: r.GetApiUrl(),
	})
	if err != nil {
		return nil, storeErr(err, "provider account")
	}
	return accountProto(a), nil
}

// GetProviderAccount returns an account (never its token).
func (s *Service) GetProviderAccount(ctx context.Context, r *v1.GetProviderAccountRequest) (*v1.ProviderAccount, error) {
	c, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	a, err := store.GetAccount(ctx, s.DB.Q(), r.GetAccountId())
	t := target{Type: authz.TypeProviderAccount, ID: r.GetAccountId(), Tenant: r.GetTenantId(), What: "provider account", Field: "accountId"}
	if _, err := s.authorizeOwned(ctx, c, t, a.TenantID, err, authz.ProviderAccountsRead, ""); err != nil {
		return nil, err
	}
	return accountProto(a), nil
}

// ListProviderAccounts returns the tenant's accounts.
func (s *Service) ListProviderAccounts(ctx context.Context, r *v1.ListProviderAccountsRequest) ([]*v1.ProviderAccount, error) {
	_, err := s.authorizeList(ctx, authz.ProviderAccountsRead, r.GetTenantId(), true)
	if err != nil {
		return nil, err
	}
	as, err := store.ListAccounts(ctx, s.DB.Q(), r.GetTenantId())
	if err != nil {
		return nil, storeErr(err, "provider account")
	}
	out := make([]*v1.ProviderAccount, len(as))
	for i, a := range as {
		out[i] = accountProto(a)
	}
	return out, nil
}

// CreatePool makes a pool on an account of the tenant.
func (s *Service) CreatePool(ctx context.Context, r *v1.CreatePoolRequest) (*v1.Pool, error) {
	c, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	if err := requirePlatformAdmin(c); err != nil {
		return nil, err
	}
	a, err := store.GetAccount(ctx, s.DB.Q(), r.GetAccountId())
	if err := refErr(err, a.TenantID == r.GetTenantId(), apierr.NotFoundf("provider account %s not found", r.GetAccountId())); err != nil {
		return nil, storeErr(err, "provider account")
	}
	policy, err := marshalPolicy(r.GetPolicy())
	if err != nil {
		return nil, err
	}
	var p store.Pool
	err = store.ExecuteTx(ctx, s.DB, func(tx pgx.Tx) error {
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
		return nil, storeErr(err, "pool")
	}
	return poolProto(p)
}

// GetPool returns one pool of the tenant.
func (s *Service) GetPool(ctx context.Context, r *v1.GetPoolRequest) (*v1.Pool, error) {
	c, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	p, err := store.GetPool(ctx, s.DB.Q(), r.GetPoolId())
	t := target{Type: authz.TypePool, ID: r.GetPoolId(), Tenant: r.GetTenantId(), What: "pool", Field: "poolId"}
	if _, err := s.authorizeOwned(ctx, c, t, p.TenantID, err, authz.PoolsRead, ""); err != nil {
		return nil, err
	}
	return poolProto(p)
}

// ListPools returns the tenant's pools.
func (s *Service) ListPools(ctx context.Context, r *v1.ListPoolsRequest) ([]*v1.Pool, error) {
	_, err := s.authorizeList(ctx, authz.PoolsRead, r.GetTenantId(), true)
	if err != nil {
		return nil, err
	}
	ps, err := store.ListPools(ctx, s.DB.Q(), r.GetTenantId())
	if err != nil {
		return nil, storeErr(err, "pool")
	}
	out := make([]*v1.Pool, 0, len(ps))
	for _, p := range ps {
		pp, err := poolProto(p)
		if err != nil {
			return nil, err
		}
		out = append(out, pp)
	}
	return out, nil
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
	c, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	if err := requirePlatformAdmin(c); err != nil {
		return nil, err
	}
	p, err := store.GetPool(ctx, s.DB.Q(), poolID)
	if err := refErr(err, p.TenantID == tenantID, apierr.NotFoundf("pool %s not found", poolID)); err != nil {
		return nil, storeErr(err, "pool")
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
	err = store.ExecuteTx(ctx, s.DB, func(tx pgx.Tx) error {
		var err error
		if p, err = store.UpdatePool(ctx, tx, poolID, raw, state); err != nil {
			return err
		}
		// The substrate follows the new policy or the archive, in this same transaction.
		effective := &v1.PoolPolicy{}
		if err := storedJSON.Unmarshal(p.Policy, effective); err != nil {
			return apierr.InternalErr(err)
		}
		return s.followSubstrate(ctx, tx, p, effective)
	})
	if err != nil {
		return nil, storeErr(err, "pool")
	}
	return poolProto(p)
}

// SetQuota sets one quota row (platform admins).
func (s *Service) SetQuota(ctx context.Context, r *v1.SetQuotaRequest) (*v1.Quota, error) {
	c, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	if err := requirePlatformAdmin(c); err != nil {
		return nil, err
	}
	if _, err := store.GetTenant(ctx, s.DB.Q(), r.GetTenantId()); err != nil {
		return nil, storeErr(err, "tenant")
	}
	if _, err := store.GetPool(ctx, s.DB.Q(), r.GetPoolId()); err != nil {
		return nil, storeErr(err, "pool")
	}
	q, err := store.SetQuota(ctx, s.DB.Q(), store.Quota{PoolID: r.GetPoolId(), TenantID: r.GetTenantId(), Resource: r.GetResource(), Limit: r.GetLimit()})
	if err != nil {
		return nil, storeErr(err, "quota")
	}
	return quotaProto(q), nil
}

// ListQuotas returns the tenant's quota rows.
func (s *Service) ListQuotas(ctx context.Context, r *v1.ListQuotasRequest) ([]*v1.Quota, error) {
	_, err := s.authorizeList(ctx, authz.PoolsRead, r.GetTenantId(), true)
	if err != nil {
		return nil, err
	}
	qs, err := store.ListQuotas(ctx, s.DB.Q(), r.GetTenantId(), r.GetPoolId())
	if err != nil {
		return nil, storeErr(err, "quota")
	}
	out := make([]*v1.Quota, len(qs))
	for i, q := range qs {
		out[i] = quotaProto(q)
	}
	return out, nil
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
	if err := storedJSON.Unmarshal(p.Policy, policy); err != nil {
		return nil, apierr.InternalErr(err)
	}
	return &v1.Pool{Id: p.ID, TenantId: p.TenantID, AccountId: p.AccountID, Name: p.Name, Regions: p.Regions, Policy: policy, State: p.State, CreateTime: timestamppb.New(p.CreatedAt)}, nil
}

func quotaProto(q store.Quota) *v1.Quota {
	return &v1.Quota{PoolId: q.PoolID, TenantId: q.TenantID, Resource: q.Resource, Limit: q.Limit, Used: q.Used}
}
