package core

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"fmt"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"better-compute.dev/compute/apierr"
	"better-compute.dev/compute/authz"
	v1 "better-compute.dev/compute/gen/go/bettercompute/compute/v1"
	"better-compute.dev/compute/gen/go/bettercompute/compute/v1/errcode"
	"better-compute.dev/compute/ids"
	"better-compute.dev/compute/store"
)

// tokenPrefix marks the platform's bearer secrets so leaked ones are easy to find and revoke.
const tokenPrefix = "bct_"

// HashSecret is how a bearer secret is stored: SHA-256 suffices for 256-bit random secrets.
func HashSecret(secret string) []byte {
	h := sha256.Sum256([]byte(secret))
	return h[:]
}

func newSecret() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return tokenPrefix + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b))
}

// Authenticate resolves a bearer secret to its caller.
func (s *Service) Authenticate(ctx context.Context, secret string) (Caller, error) {
	if !strings.HasPrefix(secret, tokenPrefix) || len(secret) > 200 {
		return Caller{}, &apierr.Error{Code: errcode.Unauthenticated, Message: "unknown or expired token"}
	}
	return s.authenticateHash(ctx, HashSecret(secret))
}

// authenticateHash resolves a token by its hash (Authenticate, and watches asking again).
func (s *Service) authenticateHash(ctx context.Context, hash []byte) (Caller, error) {
	key := string(hash)
	s.principals.touch(s.DB)
	if c, ok := s.principals.get(key); ok {
		return c, nil
	}
	// Callers of one token that miss together (the open watches of a token, all asking again
	// when its entry expires) share one read.
	// The read does not end with the first caller's context: its answer serves every caller
	// waiting on it (a caller whose context has already ended does not start one). Do, not
	// DoChan, so that a panic reaches the caller's goroutine and its recovery.
	if err := ctx.Err(); err != nil {
		return Caller{}, storeErr(fmt.Errorf("%w: %w", store.ErrUnavailable, err), "token")
	}
	v, err, _ := s.principals.lookups.Do(key, func() (any, error) {
		c, ok, gen := s.principals.lookup(key)
		if ok {
			return c, nil
		}
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), principalLookupTimeout)
		defer cancel()
		return s.lookupToken(ctx, key, hash, gen)
	})
	if err != nil {
		return Caller{}, err
	}
	return v.(Caller), nil
}

// principalLookupTimeout bounds one shared read of a token.
const principalLookupTimeout = 10 * time.Second

// lookupToken reads a token and its principal and caches the caller, unless the cache forgot its
// entries (generation gen) meanwhile.
func (s *Service) lookupToken(ctx context.Context, key string, hash []byte, gen uint64) (Caller, error) {
	asked := s.principals.clock()
	p, expires, err := store.AuthenticateToken(ctx, s.DB.Q(), hash)
	if err != nil {
		if apierr.CodeOf(storeErr(err, "token")) == errcode.NotFound {
			return Caller{}, &apierr.Error{Code: errcode.Unauthenticated, Message: "unknown or expired token"}
		}
		return Caller{}, storeErr(err, "token")
	}
	c := Caller{PrincipalID: p.ID, TenantID: p.TenantID, tokenHash: hash}
	if p.PlatformAdmin {
		// The database names platform principals; OpenFGA decides whether they act as one.
		if c.PlatformAdmin, err = s.platformAdmin(ctx, p.ID); err != nil {
			return Caller{}, err
		}
	}
	s.principals.put(key, c, gen, asked, expires)
	return c, nil
}

// platformAdmin asks OpenFGA whether a principal the database records as a platform principal
// holds compute:platform:manage. The grant is written first (idempotently, once per process), so
// a replica whose in-process engine started after the bootstrap also knows it.
func (s *Service) platformAdmin(ctx context.Context, principalID string) (bool, error) {
	if _, done := s.platformSynced.Load(principalID); !done {
		if err := s.Authz.GrantPlatformAdmin(ctx, principalID); err != nil {
			return false, authzErr(err)
		}
		s.platformSynced.Store(principalID, true)
	}
	ok, err := s.Authz.Check(ctx, authz.Check{Principal: principalID, Permission: authz.PlatformManage, Object: authz.PlatformObject})
	if err != nil {
		return false, authzErr(err)
	}
	return ok, nil
}

// BootstrapAdmin makes a platform admin principal and a token for it; dev mode prints the secret.
func (s *Service) BootstrapAdmin(ctx context.Context, name string) (principalID, secret string, err error) {
	secret = newSecret()
	principalID = ids.New(ids.Principal)
	err = store.ExecuteTx(ctx, s.DB, func(tx store.Tx) error {
		if _, err := store.InsertPrincipal(ctx, tx, store.Principal{ID: principalID, Kind: "serviceAccount", DisplayName: name, PlatformAdmin: true}); err != nil {
			return err
		}
		_, err := store.InsertToken(ctx, tx, store.Token{ID: ids.New(ids.Token), PrincipalID: principalID, SecretHash: HashSecret(secret)})
		return err
	})
	if err == nil && s.Authz != nil {
		if err = s.Authz.GrantPlatformAdmin(ctx, principalID); err == nil {
			s.platformSynced.Store(principalID, true)
		}
	}
	return principalID, secret, err
}

// CreateTenant makes a tenant (platform admins).
func (s *Service) CreateTenant(ctx context.Context, r *v1.CreateTenantRequest) (*v1.Tenant, error) {
	c, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	if err := requirePlatformAdmin(c); err != nil {
		return nil, err
	}
	t, err := store.InsertTenant(ctx, s.DB.Q(), store.Tenant{ID: r.GetTenantId(), DisplayName: r.GetDisplayName()})
	if err != nil {
		if apierr.CodeOf(storeErr(err, "tenant")) == errcode.InvalidInput {
			if store.ConstraintName(err) == "tenants_id_fold" {
				return nil, apierr.Invalid("tenantId", "a tenant whose id differs from %s only in case already exists", r.GetTenantId())
			}
			return nil, apierr.Invalid("tenantId", "tenant %s already exists", r.GetTenantId())
		}
		return nil, storeErr(err, "tenant")
	}
	return tenantProto(t), nil
}

// GetTenant returns a tenant the caller may read.
func (s *Service) GetTenant(ctx context.Context, r *v1.GetTenantRequest) (*v1.Tenant, error) {
	c, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	if !c.PlatformAdmin {
		if err := s.authorizeTenant(ctx, c, authz.TenantsRead, r.GetTenantId()); err != nil {
			return nil, err
		}
	}
	t, err := store.GetTenant(ctx, s.DB.Q(), r.GetTenantId())
	if err != nil {
		return nil, storeErr(err, "tenant")
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
	return listPage(ctx, s, r, listing[store.Tenant]{
		method: "tenants", what: "tenant", access: platformOnly,
		key: func(t store.Tenant) store.Cursor { return byCreated(t.CreatedAt, t.ID) },
		query: func(p store.Page) ([]store.Tenant, error) {
			return store.ListTenants(ctx, s.DB.Q(), p)
		},
	}, each(infallible(tenantProto)))
}

// authorizeTenantAdmin lets platform admins and the tenant's admins manage its principals and grants.
func (s *Service) authorizeTenantAdmin(ctx context.Context, tenantID string) (Caller, error) {
	return s.authorizeList(ctx, authz.TenantsManage, tenantID, platformKnownTenant)
}

// CreatePrincipal makes a user or service account of a tenant.
func (s *Service) CreatePrincipal(ctx context.Context, r *v1.CreatePrincipalRequest) (*v1.Principal, error) {
	if _, err := s.authorizeTenantAdmin(ctx, r.GetTenantId()); err != nil {
		return nil, err
	}
	p, err := store.InsertPrincipal(ctx, s.DB.Q(), store.Principal{
		ID: ids.New(ids.Principal), TenantID: r.GetTenantId(), Kind: r.GetKind(), DisplayName: r.GetDisplayName(),
	})
	if err != nil {
		return nil, storeErr(err, "principal")
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
	return listPage(ctx, s, r, listing[store.Principal]{
		method: "principals", what: "principal", perm: authz.TenantsManage, access: platformKnownTenant, tenant: r.GetTenantId(),
		key: func(p store.Principal) store.Cursor { return byID(p.ID) },
		query: func(p store.Page) ([]store.Principal, error) {
			return store.ListPrincipals(ctx, s.DB.Q(), r.GetTenantId(), p)
		},
	}, each(infallible(principalProto)))
}

// tenantPrincipal loads a principal and checks it belongs to the tenant (else NOT_FOUND).
func (s *Service) tenantPrincipal(ctx context.Context, tenantID, principalID string) (store.Principal, error) {
	p, err := store.GetPrincipal(ctx, s.DB.Q(), principalID)
	if err := refErr(err, p.TenantID == tenantID, apierr.NotFoundf("principal %s not found", principalID)); err != nil {
		return p, storeErr(err, "principal")
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
	secret := newSecret()
	t, err := store.InsertToken(ctx, s.DB.Q(), store.Token{
		ID: ids.New(ids.Token), PrincipalID: r.GetPrincipalId(), SecretHash: HashSecret(secret), ExpiresAt: expires,
	})
	if err != nil {
		return nil, "", storeErr(err, "token")
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
	t, err := store.GetToken(ctx, s.DB.Q(), r.GetTokenId())
	if err := refErr(err, true, notFound); err != nil {
		return nil, storeErr(err, "token")
	}
	owner, err := store.GetPrincipal(ctx, s.DB.Q(), t.PrincipalID)
	if err := refErr(err, owner.TenantID == r.GetTenantId(), notFound); err != nil {
		return nil, storeErr(err, "token")
	}
	t, err = store.RevokeToken(ctx, s.DB.Q(), t.ID)
	if err != nil {
		return nil, storeErr(err, "token")
	}
	// This replica refuses the token at once; the others when they next read the credential
	// version (store.RevokeToken raised it), within PrincipalCacheTTL.
	s.principals.reset()
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
			err = s.Authz.GrantTenantRole(ctx, r.GetTenantId(), r.GetPrincipalId(), role)
		} else {
			err = s.Authz.RevokeTenantRole(ctx, r.GetTenantId(), r.GetPrincipalId(), role)
		}
	} else {
		owner, oerr := s.ownerOf(ctx, r.GetObjectType(), r.GetObjectId())
		if err := refErr(oerr, owner == r.GetTenantId(), apierr.NotFoundf("%s %s not found", r.GetObjectType(), r.GetObjectId())); err != nil {
			return storeErr(err, r.GetObjectType())
		}
		obj := authz.Object{Type: r.GetObjectType(), ID: r.GetObjectId(), Tenant: owner}
		if grant {
			err = s.Authz.GrantObject(ctx, obj, r.GetPrincipalId(), authz.Level(r.GetRole()))
		} else {
			err = s.Authz.RevokeObject(ctx, obj, r.GetPrincipalId(), authz.Level(r.GetRole()))
		}
	}
	if err != nil {
		if errorsIsInvalid(err) {
			return apierr.Invalid("objectType", "objectType %s does not take grants", r.GetObjectType())
		}
		return authzErr(err)
	}
	return nil
}

// CreateProject makes a project.
func (s *Service) CreateProject(ctx context.Context, r *v1.CreateProjectRequest) (*v1.Project, error) {
	c, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	if err := s.authorizeTenant(ctx, c, authz.ProjectsManage, r.GetTenantId()); err != nil {
		return nil, err
	}
	p, err := store.InsertProject(ctx, s.DB.Q(), store.Project{ID: ids.New(ids.Project), TenantID: r.GetTenantId(), Name: r.GetName()})
	if err != nil {
		return nil, storeErr(err, "project")
	}
	return projectProto(p), nil
}

// GetProject returns one project.
func (s *Service) GetProject(ctx context.Context, r *v1.GetProjectRequest) (*v1.Project, error) {
	c, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	p, err := store.GetProject(ctx, s.DB.Q(), r.GetTenantId(), r.GetProjectId())
	if _, err := s.authorizeOwned(ctx, c, projectTarget(r.GetTenantId(), r.GetProjectId()), p.TenantID, err, authz.ProjectsRead, ""); err != nil {
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
	return listPage(ctx, s, r, listing[store.Project]{
		method: "projects", what: "project", perm: authz.ProjectsRead, tenant: r.GetTenantId(),
		key: func(p store.Project) store.Cursor { return byID(p.ID) },
		query: func(p store.Page) ([]store.Project, error) {
			return store.ListProjects(ctx, s.DB.Q(), r.GetTenantId(), p)
		},
	}, each(infallible(projectProto)))
}

func tenantProto(t store.Tenant) *v1.Tenant {
	return &v1.Tenant{Id: t.ID, DisplayName: t.DisplayName, CreateTime: timestamppb.New(t.CreatedAt)}
}

func principalProto(p store.Principal) *v1.Principal {
	return &v1.Principal{Id: p.ID, TenantId: p.TenantID, Kind: p.Kind, DisplayName: p.DisplayName, CreateTime: timestamppb.New(p.CreatedAt)}
}

func tokenProto(t store.Token) *v1.Token {
	return &v1.Token{Id: t.ID, PrincipalId: t.PrincipalID, ExpireTime: tsOrNil(t.ExpiresAt), RevokeTime: tsOrNil(t.RevokedAt), CreateTime: timestamppb.New(t.CreatedAt)}
}

func projectProto(p store.Project) *v1.Project {
	return &v1.Project{Id: p.ID, TenantId: p.TenantID, Name: p.Name, CreateTime: timestamppb.New(p.CreatedAt)}
}

func tsOrNil(t *time.Time) *timestamppb.Timestamp {
	if t == nil {
		return nil
	}
	return timestamppb.New(*t)
}

// projectTarget names a project of tenantID by id for the by-id prologue.
func projectTarget(tenantID, projectID string) target {
	return target{Type: authz.TypeProject, ID: projectID, Tenant: tenantID, What: "project", Field: "projectId"}
}
