package authz

import (
	"context"
	"errors"
)

// Errors of the package. Callers fail closed on any error.
var (
	// ErrUnavailable wraps every failure to reach the engine or to get an answer
	// from it (connection refused, timeouts, datastore errors, a closed engine).
	ErrUnavailable = errors.New("authz: engine unavailable")
	// ErrUnknownPermission is returned when the permission is not defined on the
	// object's type in the model.
	ErrUnknownPermission = errors.New("authz: permission not defined on object type")
	// ErrInvalid is returned for malformed input: empty or ill-formed ids, an
	// unknown role or level, a tenant that contradicts a compute-tenant object.
	ErrInvalid = errors.New("authz: invalid request")
	// ErrRejected is returned when the engine refuses a request as invalid; with
	// the validation done here first it points at a model and code mismatch.
	ErrRejected = errors.New("authz: engine rejected request")
)

// MaxBatch is the most checks sent to the engine in one batch call; OpenFGA's
// BatchCheck takes at most 50.
const MaxBatch = 50

// Authorizer answers permission checks and records role grants.
type Authorizer interface {
	// Check reports whether c.Principal holds c.Permission on c.Object. It never
	// returns true together with an error.
	Check(ctx context.Context, c Check) (bool, error)
	// BatchCheck answers many checks, in the order given, sending at most
	// MaxBatch per engine call. One failing item fails the whole call.
	BatchCheck(ctx context.Context, cs []Check) ([]bool, error)
	// GrantTenantRole gives principal role on tenant. Granting twice is no error.
	GrantTenantRole(ctx context.Context, tenant, principal string, role Role) error
	// RevokeTenantRole removes the role; revoking an absent grant is no error.
	RevokeTenantRole(ctx context.Context, tenant, principal string, role Role) error
	// GrantObject gives principal a direct grant on one object. Granting twice is
	// no error.
	GrantObject(ctx context.Context, obj Object, principal string, level Level) error
	// RevokeObject removes a direct grant; revoking an absent grant is no error.
	RevokeObject(ctx context.Context, obj Object, principal string, level Level) error
	// GrantPlatformAdmin makes principal an admin of the platform (compute-platform:root).
	GrantPlatformAdmin(ctx context.Context, principal string) error
	// Close releases the engine or client; every later call returns an error
	// wrapping ErrUnavailable.
	Close() error
}
