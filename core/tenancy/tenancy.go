package tenancy

import (
	"context"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"better-compute.dev/compute/apierr"
	"better-compute.dev/compute/authz"
	"better-compute.dev/compute/core"
	v1 "better-compute.dev/compute/gen/go/bettercompute/compute/v1"
	"better-compute.dev/compute/gen/go/bettercompute/compute/v1/errcode"
	"better-compute.dev/compute/ids"
	"better-compute.dev/compute/store"
)

// CreateTenant makes a tenant (platform admins).
func (s *Service) CreateTenant(ctx context.Context, r *v1.CreateTenantRequest) (*v1.Tenant, error) {
	if err := core.RequirePlatformAdminCaller(ctx); err != nil {
		return nil, err
	}
	t, err := store.InsertTenant(ctx, s.base.Store.Q(), store.Tenant{ID: r.GetTenantId(), DisplayName: r.GetDisplayName()})
	if err != nil {
		if apierr.CodeOf(core.StoreErr(err, "tenant")) == errcode.InvalidInput {
			if store.ConstraintName(err) == "tenants_id_fold" {
				return nil, apierr.Invalid("tenantId", "a tenant whose id differs from %s only in case already exists", r.GetTenantId())
			}
			return nil, apierr.Invalid("tenantId", "tenant %s already exists", r.GetTenantId())
		}
		return nil, core.StoreErr(err, "tenant")
	}
	return tenantProto(t), nil
}

// GetTenant returns a tenant the caller may read.
func (s *Service) GetTenant(ctx context.Context, r *v1.GetTenantRequest) (*v1.Tenant, error) {
	c, err := core.RequireCaller(ctx)
	if err != nil {
		return nil, err
	}
	if !c.PlatformAdmin {
		if err := s.base.AuthorizeTenant(ctx, c, authz.TenantsRead, r.GetTenantId()); err != nil {
			return nil, err
		}
	}
	t, err := store.GetTenant(ctx, s.base.Store.Q(), r.GetTenantId())
	if err != nil {
		return nil, core.StoreErr(err, "tenant")
	}
	return tenantProto(t), nil
}

// ListTenants returns every tenant in creation order, at most 1000 (ListTenantsPage without the
// token). Platform admins only.
func (s *Service) ListTenants(ctx context.Context) ([]*v1.Tenant, error) {
	ts, _, err := s.ListTenantsPage(ctx, &v1.ListTenantsRequest{})
	return ts, err
}

// ListTenantsPage returns at most 1000 tenants, or one page, in (created_at, id) order and the
// next page's token.
func (s *Service) ListTenantsPage(ctx context.Context, r *v1.ListTenantsRequest) ([]*v1.Tenant, string, error) {
	return core.ListPage(ctx, s.base, r, core.Listing[store.Tenant]{
		Method: "tenants", What: "tenant", Access: core.PlatformOnly,
		Key: func(t store.Tenant) store.Cursor { return core.ByCreated(t.CreatedAt, t.ID) },
		Query: func(p store.Page) ([]store.Tenant, error) {
			return store.ListTenants(ctx, s.base.Store.Q(), p)
		},
	}, core.Each(core.Infallible(tenantProto)))
}

// authorizeTenantAdmin lets platform admins and the tenant's admins manage its principals and grants.
func (s *Service) authorizeTenantAdmin(ctx context.Context, tenantID string) (core.Caller, error) {
	return s.base.AuthorizeList(ctx, authz.TenantsManage, tenantID, core.PlatformKnownTenant)
}

// CreatePrincipal makes a user or service account of a tenant.
func (s *Service) CreatePrincipal(ctx context.Context, r *v1.CreatePrincipalRequest) (*v1.Principal, error) {
	if _, err := s.authorizeTenantAdmin(ctx, r.GetTenantId()); err != nil {
		return nil, err
	}
	p, err := store.InsertPrincipal(ctx, s.base.Store.Q(), store.Principal{
		ID: ids.New(ids.Principal), TenantID: r.GetTenantId(), Kind: r.GetKind(), DisplayName: r.GetDisplayName(),
	})
	if err != nil {
		return nil, core.StoreErr(err, "principal")
	}
	return principalProto(p), nil
}

// ListPrincipals returns a tenant's principals in creation order (ListPrincipalsPage without the
// token). Platform admins and the tenant's admins.
func (s *Service) ListPrincipals(ctx context.Context, r *v1.ListPrincipalsRequest) ([]*v1.Principal, error) {
	ps, _, err := s.ListPrincipalsPage(ctx, r)
	return ps, err
}

// ListPrincipalsPage returns at most 1000 principals, or one page, and the next page's token.
func (s *Service) ListPrincipalsPage(ctx context.Context, r *v1.ListPrincipalsRequest) ([]*v1.Principal, string, error) {
	return core.ListPage(ctx, s.base, r, core.Listing[store.Principal]{
		Method: "principals", What: "principal", Perm: authz.TenantsManage, Access: core.PlatformKnownTenant, Tenant: r.GetTenantId(),
		Key: func(p store.Principal) store.Cursor { return core.ByID(p.ID) },
		Query: func(p store.Page) ([]store.Principal, error) {
			return store.ListPrincipals(ctx, s.base.Store.Q(), r.GetTenantId(), p)
		},
	}, core.Each(core.Infallible(principalProto)))
}

// tenantPrincipal loads a principal and checks it belongs to the tenant (else NOT_FOUND).
func (s *Service) tenantPrincipal(ctx context.Context, tenantID, principalID string) (store.Principal, error) {
	p, err := store.GetPrincipal(ctx, s.base.Store.Q(), principalID)
	if err := core.RefErr(err, p.TenantID == tenantID, apierr.NotFoundf("principal %s not found", principalID)); err != nil {
		return p, core.StoreErr(err, "principal")
	}
	return p, nil
}

// CreateToken issues a bearer token; the secret is returned once.
func (s *Service) CreateToken(ctx context.Context, r *v1.CreateTokenRequest) (*v1.Token, string, error) {
	if _, err := s.authorizeTenantAdmin(ctx, r.GetTenantId()); err != nil {
		return nil, "", err
	}
	if _, err := s.tenantPrincipal(ctx, r.GetTenantId(), r.GetPrincipalId()); err != nil {
		return nil, "", err
	}
	var expires *time.Time
	if r.TtlSeconds != nil {
		t := time.Now().Add(time.Duration(r.GetTtlSeconds()) * time.Second)
		expires = &t
	}
	secret := core.NewSecret()
	t, err := store.InsertToken(ctx, s.base.Store.Q(), store.Token{
		ID: ids.New(ids.Token), PrincipalID: r.GetPrincipalId(), SecretHash: core.HashSecret(secret), ExpiresAt: expires,
	})
	if err != nil {
		return nil, "", core.StoreErr(err, "token")
	}
	return tokenProto(t), secret, nil
}

// RevokeToken revokes a token of the tenant's principals.
func (s *Service) RevokeToken(ctx context.Context, r *v1.RevokeTokenRequest) (*v1.Token, error) {
	if _, err := s.authorizeTenantAdmin(ctx, r.GetTenantId()); err != nil {
		return nil, err
	}
	// A missing token and another tenant's token are the same NOT_FOUND; a database fault in
	// either lookup keeps its cause.
	notFound := apierr.NotFoundf("token %s not found", r.GetTokenId())
	t, err := store.GetToken(ctx, s.base.Store.Q(), r.GetTokenId())
	if err := core.RefErr(err, true, notFound); err != nil {
		return nil, core.StoreErr(err, "token")
	}
	owner, err := store.GetPrincipal(ctx, s.base.Store.Q(), t.PrincipalID)
	if err := core.RefErr(err, owner.TenantID == r.GetTenantId(), notFound); err != nil {
		return nil, core.StoreErr(err, "token")
	}
	t, err = store.RevokeToken(ctx, s.base.Store.Q(), t.ID)
	if err != nil {
		return nil, core.StoreErr(err, "token")
	}
	// This replica refuses the token at once; the others when they next read the credential
	// version (store.RevokeToken raised it), within PrincipalCacheTTL.
	s.base.ForgetPrincipals()
	return tokenProto(t), nil
}

// GrantRole grants a tenant role or a direct grant on one object of the tenant.
func (s *Service) GrantRole(ctx context.Context, r *v1.GrantRoleRequest) error {
	return s.changeGrant(ctx, r, true)
}

// RevokeRole takes a grant back.
func (s *Service) RevokeRole(ctx context.Context, r *v1.GrantRoleRequest) error {
	return s.changeGrant(ctx, r, false)
}

func (s *Service) changeGrant(ctx context.Context, r *v1.GrantRoleRequest, grant bool) error {
	if _, err := s.authorizeTenantAdmin(ctx, r.GetTenantId()); err != nil {
		return err
	}
	// Grantees are principals of the tenant: a tenant admin cannot hand its objects to outsiders.
	if _, err := s.tenantPrincipal(ctx, r.GetTenantId(), r.GetPrincipalId()); err != nil {
		return err
	}
	var err error
	if r.GetObjectType() == "" {
		role := authz.Role(r.GetRole())
		if grant {
			err = s.base.Authz.GrantTenantRole(ctx, r.GetTenantId(), r.GetPrincipalId(), role)
		} else {
			err = s.base.Authz.RevokeTenantRole(ctx, r.GetTenantId(), r.GetPrincipalId(), role)
		}
	} else {
		owner, oerr := s.base.OwnerOf(ctx, r.GetObjectType(), r.GetObjectId())
		if err := core.RefErr(oerr, owner == r.GetTenantId(), apierr.NotFoundf("%s %s not found", r.GetObjectType(), r.GetObjectId())); err != nil {
			return core.StoreErr(err, r.GetObjectType())
		}
		obj := authz.Object{Type: r.GetObjectType(), ID: r.GetObjectId(), Tenant: owner}
		if grant {
			err = s.base.Authz.GrantObject(ctx, obj, r.GetPrincipalId(), authz.Level(r.GetRole()))
		} else {
			err = s.base.Authz.RevokeObject(ctx, obj, r.GetPrincipalId(), authz.Level(r.GetRole()))
		}
	}
	if err != nil {
		if core.IsAuthzInvalid(err) {
			return apierr.Invalid("objectType", "objectType %s does not take grants", r.GetObjectType())
		}
		return core.AuthzErr(err)
	}
	return nil
}

// CreateProject makes a project.
func (s *Service) CreateProject(ctx context.Context, r *v1.CreateProjectRequest) (*v1.Project, error) {
	c, err := core.RequireCaller(ctx)
	if err != nil {
		return nil, err
	}
	if err := s.base.AuthorizeTenant(ctx, c, authz.ProjectsManage, r.GetTenantId()); err != nil {
		return nil, err
	}
	p, err := store.InsertProject(ctx, s.base.Store.Q(), store.Project{ID: ids.New(ids.Project), TenantID: r.GetTenantId(), Name: r.GetName()})
	if err != nil {
		return nil, core.StoreErr(err, "project")
	}
	return projectProto(p), nil
}

// GetProject returns one project.
func (s *Service) GetProject(ctx context.Context, r *v1.GetProjectRequest) (*v1.Project, error) {
	c, err := core.RequireCaller(ctx)
	if err != nil {
		return nil, err
	}
	p, err := store.GetProject(ctx, s.base.Store.Q(), r.GetTenantId(), r.GetProjectId())
	if _, err := s.base.AuthorizeOwned(ctx, c, core.ProjectTarget(r.GetTenantId(), r.GetProjectId()), p.TenantID, err, authz.ProjectsRead, ""); err != nil {
		return nil, err
	}
	return projectProto(p), nil
}

// ListProjects returns the tenant's projects in creation order (ListProjectsPage without the token).
func (s *Service) ListProjects(ctx context.Context, r *v1.ListProjectsRequest) ([]*v1.Project, error) {
	ps, _, err := s.ListProjectsPage(ctx, r)
	return ps, err
}

// ListProjectsPage returns at most 1000 projects, or one page, and the next page's token.
func (s *Service) ListProjectsPage(ctx context.Context, r *v1.ListProjectsRequest) ([]*v1.Project, string, error) {
	return core.ListPage(ctx, s.base, r, core.Listing[store.Project]{
		Method: "projects", What: "project", Perm: authz.ProjectsRead, Tenant: r.GetTenantId(),
		Key: func(p store.Project) store.Cursor { return core.ByID(p.ID) },
		Query: func(p store.Page) ([]store.Project, error) {
			return store.ListProjects(ctx, s.base.Store.Q(), r.GetTenantId(), p)
		},
	}, core.Each(core.Infallible(projectProto)))
}

func tenantProto(t store.Tenant) *v1.Tenant {
	return &v1.Tenant{Id: t.ID, DisplayName: t.DisplayName, CreateTime: timestamppb.New(t.CreatedAt)}
}

func principalProto(p store.Principal) *v1.Principal {
	return &v1.Principal{Id: p.ID, TenantId: p.TenantID, Kind: p.Kind, DisplayName: p.DisplayName, CreateTime: timestamppb.New(p.CreatedAt)}
}

func tokenProto(t store.Token) *v1.Token {
	return &v1.Token{Id: t.ID, PrincipalId: t.PrincipalID, ExpireTime: core.TimeOrNil(t.ExpiresAt), RevokeTime: core.TimeOrNil(t.RevokedAt), CreateTime: timestamppb.New(t.CreatedAt)}
}

func projectProto(p store.Project) *v1.Project {
	return &v1.Project{Id: p.ID, TenantId: p.TenantID, Name: p.Name, CreateTime: timestamppb.New(p.CreatedAt)}
}
