package core

import (
	"context"
	"errors"

	"better-compute.dev/compute/apierr"
	"better-compute.dev/compute/authz"
)

// authorize asks OpenFGA whether the caller holds perm on obj (whose Tenant comes from the
// database). Denied is ACCESS_DENIED when the caller may see the object (it holds readPerm on it)
// and NOT_FOUND otherwise, so a probe from another tenant learns nothing. An engine failure fails
// closed with UNAVAILABLE.
func (s *Service) authorize(ctx context.Context, c Caller, perm authz.Permission, obj authz.Object, readPerm authz.Permission, what string) error {
	ok, err := s.Authz.Check(ctx, authz.Check{Principal: c.PrincipalID, Permission: perm, Object: obj})
	if err != nil {
		return authzErr(err)
	}
	if ok {
		return nil
	}
	if readPerm != "" && readPerm != perm {
		visible, err := s.Authz.Check(ctx, authz.Check{Principal: c.PrincipalID, Permission: readPerm, Object: obj})
		if err != nil {
			return authzErr(err)
		}
		if visible {
			return apierr.Denied("%s on %s %s is not granted", perm, what, obj.ID)
		}
	}
	if obj.Type == authz.TypeTenant {
		return apierr.Denied("%s on tenant %s is not granted", perm, obj.ID)
	}
	return apierr.NotFoundf("%s %s not found", what, obj.ID)
}

// authorizeTenant checks perm on the tenant itself (list and create: the object does not exist yet).
func (s *Service) authorizeTenant(ctx context.Context, c Caller, perm authz.Permission, tenantID string) error {
	return s.authorize(ctx, c, perm, authz.TenantObject(tenantID), "", "tenant")
}

// authorizeByID is the prologue of a call on one object named by id: the caller, the object's
// tenant from the database (another tenant's object is NOT_FOUND, exactly like a missing one,
// naming field when given), then perm on it (readPerm decides ACCESS_DENIED versus NOT_FOUND on
// a refusal, as in authorize).
func (s *Service) authorizeByID(ctx context.Context, objectType, requestTenant, id string, perm, readPerm authz.Permission, what, field string) (Caller, authz.Object, error) {
	c, err := caller(ctx)
	if err != nil {
		return c, authz.Object{}, err
	}
	owner, err := s.ownerOf(ctx, objectType, id)
	if err != nil || owner != requestTenant {
		return c, authz.Object{}, &apierr.Error{Code: apierr.NotFound, Field: field, Message: what + " " + id + " not found"}
	}
	obj := authz.Object{Type: objectType, ID: id, Tenant: owner}
	return c, obj, s.authorize(ctx, c, perm, obj, readPerm, what)
}

// authorizeOwnedRead is the read of one object by id: the row must exist and belong to the tenant
// the request names (else NOT_FOUND, exactly as for a missing one), then the caller needs perm on it.
// found reports whether the lookup found the row; obj.Tenant is the row's tenant.
func (s *Service) authorizeOwnedRead(ctx context.Context, c Caller, requestTenant string, found bool, obj authz.Object, perm authz.Permission, what string) error {
	if !found || obj.Tenant != requestTenant {
		return apierr.NotFoundf("%s %s not found", what, obj.ID)
	}
	if c.PlatformAdmin && platformAdministered[obj.Type] {
		return nil
	}
	return s.authorize(ctx, c, perm, obj, "", what)
}

// platformAdministered are the types platform admins make for tenants and so may read.
var platformAdministered = map[string]bool{authz.TypePool: true, authz.TypeProviderAccount: true}

// authorizeTenantOrPlatform checks perm on the tenant, letting platform admins through (they
// administer pools, accounts and quotas of every tenant).
func (s *Service) authorizeTenantOrPlatform(ctx context.Context, c Caller, perm authz.Permission, tenantID string) error {
	if c.PlatformAdmin {
		return nil
	}
	return s.authorizeTenant(ctx, c, perm, tenantID)
}

// filterVisible batch-checks perm on each object and keeps those granted (list methods: the
// tenant is checked first, then each item).
func (s *Service) filterVisible(ctx context.Context, c Caller, perm authz.Permission, objs []authz.Object) ([]bool, error) {
	if len(objs) == 0 {
		return nil, nil
	}
	checks := make([]authz.Check, len(objs))
	for i, o := range objs {
		checks[i] = authz.Check{Principal: c.PrincipalID, Permission: perm, Object: o}
	}
	ok, err := s.Authz.BatchCheck(ctx, checks)
	if err != nil {
		return nil, authzErr(err)
	}
	return ok, nil
}

// requirePlatformAdmin guards the platform surface (tenants, accounts, pools, quotas).
func requirePlatformAdmin(c Caller) error {
	if !c.PlatformAdmin {
		return apierr.Denied("only platform admins may do this")
	}
	return nil
}

func authzErr(err error) error {
	if errors.Is(err, authz.ErrUnavailable) {
		return apierr.UnavailableErr("authorization", err)
	}
	return apierr.InternalErr(err)
}
