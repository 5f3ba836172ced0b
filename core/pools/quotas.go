package pools

import (
	"context"

	"better-compute.dev/compute/authz"
	"better-compute.dev/compute/core"
	v1 "better-compute.dev/compute/gen/go/bettercompute/compute/v1"
	"better-compute.dev/compute/store"
)

// SetQuota sets one quota row (platform admins).
func (s *Service) SetQuota(ctx context.Context, r *v1.SetQuotaRequest) (*v1.Quota, error) {
	if err := core.RequirePlatformAdminCaller(ctx); err != nil {
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

func quotaProto(q store.Quota) *v1.Quota {
	return &v1.Quota{PoolId: q.PoolID, TenantId: q.TenantID, Resource: q.Resource, Limit: q.Limit, Used: q.Used}
}
