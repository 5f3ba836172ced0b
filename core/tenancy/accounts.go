package tenancy

import (
	"context"

	"google.golang.org/protobuf/types/known/timestamppb"

	"better-compute.dev/compute/apierr"
	"better-compute.dev/compute/authz"
	"better-compute.dev/compute/core"
	v1 "better-compute.dev/compute/gen/go/bettercompute/compute/v1"
	"better-compute.dev/compute/ids"
	"better-compute.dev/compute/seal"
	"better-compute.dev/compute/store"
)

// CreateProviderAccount stores an account with its token sealed, bound to the account id.
func (s *Service) CreateProviderAccount(ctx context.Context, r *v1.CreateProviderAccountRequest) (*v1.ProviderAccount, error) {
	if err := core.RequirePlatformAdminCaller(ctx); err != nil {
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

func accountProto(a store.Account) *v1.ProviderAccount {
	return &v1.ProviderAccount{Id: a.ID, TenantId: a.TenantID, Kind: a.Kind, Name: a.Name, TokenSet: len(a.TokenSealed) > 0, CreateTime: timestamppb.New(a.CreatedAt)}
}
