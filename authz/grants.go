package authz

import (
	"context"
	"fmt"

	openfgav1 "github.com/openfga/api/proto/openfga/v1"
)

// GrantTenantRole gives principal role on tenant.
func (c *client) GrantTenantRole(ctx context.Context, tenant, principal string, role Role) error {
	key, err := tenantRoleKey(tenant, principal, role)
	if err != nil {
		return err
	}
	return c.write(ctx, key, true)
}

// GrantPlatformAdmin makes principal a platform admin. Granting twice is no error.
func (c *client) GrantPlatformAdmin(ctx context.Context, principal string) error {
	if err := validID("principal", principal); err != nil {
		return err
	}
	return c.write(ctx, &openfgav1.TupleKey{Object: PlatformObject.String(), Relation: "admin", User: principalUser(principal)}, true)
}

// RevokeTenantRole removes role on tenant from principal.
func (c *client) RevokeTenantRole(ctx context.Context, tenant, principal string, role Role) error {
	key, err := tenantRoleKey(tenant, principal, role)
	if err != nil {
		return err
	}
	return c.write(ctx, key, false)
}

// GrantObject gives principal a direct grant on obj.
func (c *client) GrantObject(ctx context.Context, obj Object, principal string, level Level) error {
	key, err := c.objectKey(obj, principal, level)
	if err != nil {
		return err
	}
	return c.write(ctx, key, true)
}

// RevokeObject removes a direct grant on obj from principal.
func (c *client) RevokeObject(ctx context.Context, obj Object, principal string, level Level) error {
	key, err := c.objectKey(obj, principal, level)
	if err != nil {
		return err
	}
	return c.write(ctx, key, false)
}

func tenantRoleKey(tenant, principal string, role Role) (*openfgav1.TupleKey, error) {
	if err := validID("tenant", tenant); err != nil {
		return nil, err
	}
	if err := validID("principal", principal); err != nil {
		return nil, err
	}
	if !role.valid() {
		return nil, fmt.Errorf("%w: unknown role %q", ErrInvalid, role)
	}
	return &openfgav1.TupleKey{
		Object:   TenantObject(tenant).String(),
		Relation: string(role),
		User:     principalUser(principal),
	}, nil
}

func (c *client) objectKey(obj Object, principal string, level Level) (*openfgav1.TupleKey, error) {
	if !c.model.grantable[obj.Type] {
		return nil, fmt.Errorf("%w: type %q takes no direct grants", ErrInvalid, obj.Type)
	}
	if err := validID("object", obj.ID); err != nil {
		return nil, err
	}
	if err := validID("principal", principal); err != nil {
		return nil, err
	}
	if !level.valid() {
		return nil, fmt.Errorf("%w: unknown level %q", ErrInvalid, level)
	}
	return &openfgav1.TupleKey{
		Object:   obj.String(),
		Relation: string(level),
		User:     principalUser(principal),
	}, nil
}

// write stores (grant) or deletes (revoke) one role tuple, idempotently.
func (c *client) write(ctx context.Context, key *openfgav1.TupleKey, grant bool) error {
	if err := c.live(); err != nil {
		return err
	}
	req := &openfgav1.WriteRequest{StoreId: c.boot.storeID, AuthorizationModelId: c.boot.modelID}
	verb := "grant"
	if grant {
		req.Writes = &openfgav1.WriteRequestWrites{TupleKeys: []*openfgav1.TupleKey{key}, OnDuplicate: "ignore"}
	} else {
		verb = "revoke"
		req.Deletes = &openfgav1.WriteRequestDeletes{
			TupleKeys: []*openfgav1.TupleKeyWithoutCondition{{Object: key.GetObject(), Relation: key.GetRelation(), User: key.GetUser()}},
			OnMissing: "ignore",
		}
	}
	// Forget cached answers whatever the outcome: a write whose answer was lost may have landed.
	defer c.cache.invalidate()
	if _, err := c.eng.Write(ctx, req); err != nil {
		return fmt.Errorf("authz: %s %s#%s@%s: %w", verb, key.GetObject(), key.GetRelation(), key.GetUser(), err)
	}
	return nil
}
