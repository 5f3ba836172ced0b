package core

import (
	"context"
	"errors"

	"better-compute.dev/compute/apierr"
	"better-compute.dev/compute/authz"
	"better-compute.dev/compute/gen/go/bettercompute/compute/v1/errcode"
	"better-compute.dev/compute/store"
)

// decide asks OpenFGA whether the caller holds perm on obj (whose Tenant comes from the
// database). A refusal is ACCESS_DENIED when the caller may see the object (it holds readPerm on
// it) and hidden otherwise: hidden reports it, and the caller answers with its own NOT_FOUND so
// that a refusal and a missing object read the same. An engine failure fails closed with
// UNAVAILABLE.
func (s *Base) decide(ctx context.Context, c Caller, perm authz.Permission, obj authz.Object, readPerm authz.Permission, what string) (hidden bool, err error) {
	ok, err := s.Authz.Check(ctx, authz.Check{Principal: c.PrincipalID, Permission: perm, Object: obj})
	if err != nil {
		return false, AuthzErr(err)
	}
	if ok {
		return false, nil
	}
	if readPerm != "" && readPerm != perm {
		visible, err := s.Authz.Check(ctx, authz.Check{Principal: c.PrincipalID, Permission: readPerm, Object: obj})
		if err != nil {
			return false, AuthzErr(err)
		}
		if visible {
			return false, apierr.Denied("%s on %s %s is not granted", perm, what, obj.ID)
		}
	}
	return true, nil
}

// AuthorizeTenant checks perm on the tenant itself (list and create: the object does not exist
// yet). A refusal on a tenant is ACCESS_DENIED: tenant ids are not secret from their members,
// and a stranger learns nothing from "not granted".
func (s *Base) AuthorizeTenant(ctx context.Context, c Caller, perm authz.Permission, tenantID string) error {
	hidden, err := s.decide(ctx, c, perm, authz.TenantObject(tenantID), "", "tenant")
	if err != nil {
		return err
	}
	if hidden {
		return apierr.Denied("%s on tenant %s is not granted", perm, tenantID)
	}
	return nil
}

// Target names the object a by-id call is about, as the request names it.
type Target struct {
	Type   string // authorization type (authz.TypeX)
	ID     string // the id the request names
	Tenant string // the tenant the request names
	What   string // human name in messages ("load balancer")
	Field  string // the request field carrying the id ("loadBalancerId")
	// Object is the authorization object's id when the request names the object by another
	// id (a substrate by its pool); empty means ID.
	Object string
}

// object is the authorization object of t owned by tenant.
func (t Target) object(tenant string) authz.Object {
	id := t.Object
	if id == "" {
		id = t.ID
	}
	return authz.Object{Type: t.Type, ID: id, Tenant: tenant}
}

// NotFound is the one NOT_FOUND of a by-id call. A missing id, an id of another tenant and an
// object the caller may not see all answer with it, so they are byte-identical on the wire;
// cause (kept for logs, never rendered) records which it was.
func (t Target) NotFound(cause error) *apierr.Error {
	return &apierr.Error{Code: errcode.NotFound, Field: t.Field, Message: t.What + " " + t.ID + " not found", Cause: cause}
}

// errTenantMismatch is the cause of a NOT_FOUND for an object of another tenant.
var errTenantMismatch = errors.New("core: the object belongs to another tenant")

// errHidden is the cause of a NOT_FOUND for an object the caller may not read.
var errHidden = errors.New("core: the caller may not read the object")

// AuthorizeOwned is the one prologue of every call on an object named by id, once its row (or
// owner) has been looked up: lookupErr is that lookup's error and owner the row's tenant.
//
//   - store.ErrNotFound or a tenant other than the request's: NOT_FOUND (t.notFound).
//   - any other lookup error keeps its cause and its class (UNAVAILABLE for a database fault,
//     see StoreErr): it is never turned into NOT_FOUND, which would tell a client that an
//     existing object is gone.
//   - then perm on the object; readPerm decides ACCESS_DENIED versus NOT_FOUND on a refusal.
//     Platform admins read the types they administer (pools, accounts) without a check.
func (s *Base) AuthorizeOwned(ctx context.Context, c Caller, t Target, owner string, lookupErr error, perm, readPerm authz.Permission) (authz.Object, error) {
	switch {
	case errors.Is(lookupErr, store.ErrNotFound):
		return authz.Object{}, t.NotFound(lookupErr)
	case lookupErr != nil:
		return authz.Object{}, StoreErr(lookupErr, t.What)
	case owner != t.Tenant:
		return authz.Object{}, t.NotFound(errTenantMismatch)
	}
	obj := t.object(owner)
	if c.PlatformAdmin && platformAdministered[t.Type] && perm == readPermOf[t.Type] {
		return obj, nil
	}
	// Every permission on a tenant-owned object is "a direct grant, or the same permission on the
	// owning tenant" (authz TestObjectPermissionsInheritFromTenant), so a caller holding perm on
	// the tenant holds it on the object. Asking about the tenant first lets calls on many objects
	// of one tenant share one cached decision (authz.DecisionTTL) instead of paying an engine
	// check per object; a caller without the tenant permission is then checked on the object
	// itself (a direct grant), as before.
	if ok, err := s.Authz.Check(ctx, authz.Check{Principal: c.PrincipalID, Permission: perm, Object: authz.TenantObject(owner)}); err != nil {
		return obj, AuthzErr(err)
	} else if ok {
		return obj, nil
	}
	hidden, err := s.decide(ctx, c, perm, obj, readPerm, t.What)
	if err != nil {
		return obj, err
	}
	if hidden {
		return obj, t.NotFound(errHidden)
	}
	return obj, nil
}

// RefErr is the answer to a lookup of a row a request refers to (a pool, a subnet, a project):
// nf when the row is missing (store.ErrNotFound) or found but not acceptable (usable false: another
// tenant's, deleted); the lookup's own error, unchanged, for anything else, so that a database
// fault stays a database fault (StoreErr classifies it once, at the boundary) and a
// serialization failure inside ExecuteTx is still retried; nil when the row is usable.
func RefErr(err error, usable bool, nf *apierr.Error) error {
	switch {
	case errors.Is(err, store.ErrNotFound):
		nf.Cause = err
		return nf
	case err != nil:
		return err
	case !usable:
		nf.Cause = errTenantMismatch
		return nf
	}
	return nil
}

// AuthorizeByID is AuthorizeOwned for calls that look up only the owner first (mutations: the
// row itself is read again inside the transaction).
func (s *Base) AuthorizeByID(ctx context.Context, t Target, perm, readPerm authz.Permission) (Caller, authz.Object, error) {
	c, err := RequireCaller(ctx)
	if err != nil {
		return c, authz.Object{}, err
	}
	owner, err := s.OwnerOf(ctx, t.Type, t.ID)
	obj, err := s.AuthorizeOwned(ctx, c, t, owner, err, perm, readPerm)
	return c, obj, err
}

// platformAdministered are the types platform admins make for tenants (substrates through
// pools) and so may read.
var platformAdministered = map[string]bool{authz.TypePool: true, authz.TypeProviderAccount: true, authz.TypePoolSubstrate: true}

// readPermOf is the read permission of the platform-administered types.
var readPermOf = map[string]authz.Permission{
	authz.TypePool: authz.PoolsRead, authz.TypeProviderAccount: authz.ProviderAccountsRead, authz.TypePoolSubstrate: authz.SubstratesRead,
}

// ListAccess says who, besides holders of the permission on the tenant, may list.
type ListAccess int

const (
	// TenantOnly: holders of the permission on the tenant.
	TenantOnly ListAccess = iota
	// PlatformReads: also platform admins, without a check, for what they administer (pools,
	// accounts, quotas, substrates).
	PlatformReads
	// PlatformKnownTenant: also platform admins, once the tenant exists (principals: a missing
	// tenant is NOT_FOUND tenant).
	PlatformKnownTenant
	// PlatformOnly: platform admins alone (tenants/list; the permission is unused).
	PlatformOnly
)

// AuthorizeList is the one prologue of every list (and of the calls on a tenant as a whole): the
// caller, then perm on the tenant the request names, or the platform rule of access.
//
// A list needs no per-item check after that. In the model (authz/model.fga) every read relation
// of a tenant-owned type is "reader or <perm> from tenant": holding perm on the tenant grants it
// on every object of the tenant, and the rows come from the database filtered by that tenant,
// so a per-item check cannot narrow the answer. TestReadRelationsInheritFromTenant keeps this
// true: a model change that lets a per-object relation narrow a tenant grant fails it, and
// per-item checks (FilterVisible) must come back for that type.
func (s *Base) AuthorizeList(ctx context.Context, perm authz.Permission, tenantID string, access ListAccess) (Caller, error) {
	c, err := RequireCaller(ctx)
	if err != nil {
		return c, err
	}
	switch {
	case access == PlatformOnly:
		return c, RequirePlatformAdmin(c)
	case access == PlatformReads && c.PlatformAdmin:
		return c, nil
	case access == PlatformKnownTenant && c.PlatformAdmin:
		if _, err := store.GetTenant(ctx, s.Store.Q(), tenantID); err != nil {
			return c, StoreErr(err, "tenant")
		}
		return c, nil
	}
	return c, s.AuthorizeTenant(ctx, c, perm, tenantID)
}

// convertAll converts the rows of a list (after AuthorizeList) in order.
func convertAll[R any, P any](rows []R, conv func(R) (P, error)) ([]P, error) {
	out := make([]P, 0, len(rows))
	for _, r := range rows {
		p, err := conv(r)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// Infallible adapts a conversion that cannot fail to convertAll.
func Infallible[R any, P any](conv func(R) P) func(R) (P, error) {
	return func(r R) (P, error) { return conv(r), nil }
}

// FilterVisible batch-checks perm on each object and reports which are granted (instances a load
// balancer targets: the caller names them, and each needs its own grant).
func (s *Base) FilterVisible(ctx context.Context, c Caller, perm authz.Permission, objs []authz.Object) ([]bool, error) {
	if len(objs) == 0 {
		return nil, nil
	}
	checks := make([]authz.Check, len(objs))
	for i, o := range objs {
		checks[i] = authz.Check{Principal: c.PrincipalID, Permission: perm, Object: o}
	}
	ok, err := s.Authz.BatchCheck(ctx, checks)
	if err != nil {
		return nil, AuthzErr(err)
	}
	return ok, nil
}

// RequirePlatformAdminCaller is the prologue of the platform surface's writes: the request's
// caller is authenticated (UNAUTHENTICATED otherwise) and a platform admin (ACCESS_DENIED).
func RequirePlatformAdminCaller(ctx context.Context) error {
	c, err := RequireCaller(ctx)
	if err != nil {
		return err
	}
	return RequirePlatformAdmin(c)
}

// RequirePlatformAdmin guards the platform surface (tenants, accounts, pools, quotas).
func RequirePlatformAdmin(c Caller) error {
	if !c.PlatformAdmin {
		return apierr.Denied("only platform admins may do this")
	}
	return nil
}

// AuthzErr maps an authorization engine failure: UNAVAILABLE when the engine cannot answer (fail
// closed), INTERNAL otherwise.
func AuthzErr(err error) error {
	if errors.Is(err, authz.ErrUnavailable) {
		return apierr.UnavailableErr("authorization", err)
	}
	return apierr.InternalErr(err)
}
