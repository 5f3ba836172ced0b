package pools

import (
	"context"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/timestamppb"

	"better-compute.dev/compute/apierr"
	"better-compute.dev/compute/authz"
	"better-compute.dev/compute/core"
	v1 "better-compute.dev/compute/gen/go/bettercompute/compute/v1"
	"better-compute.dev/compute/ids"
	"better-compute.dev/compute/store"
)

// CreatePool makes a pool on an account of the tenant.
func (s *Service) CreatePool(ctx context.Context, r *v1.CreatePoolRequest) (*v1.Pool, error) {
	if err := core.RequirePlatformAdminCaller(ctx); err != nil {
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
	if err := core.RequirePlatformAdminCaller(ctx); err != nil {
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

func poolProto(p store.Pool) (*v1.Pool, error) {
	policy := &v1.PoolPolicy{}
	if err := core.StoredJSON.Unmarshal(p.Policy, policy); err != nil {
		return nil, apierr.InternalErr(err)
	}
	return &v1.Pool{Id: p.ID, TenantId: p.TenantID, AccountId: p.AccountID, Name: p.Name, Regions: p.Regions, Policy: policy, State: p.State, CreateTime: timestamppb.New(p.CreatedAt)}, nil
}
