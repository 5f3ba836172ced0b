// Package core is the base the API's parts share: the caller (Caller, WithCaller, CallerFrom),
// authentication and its principal cache, the prologue of every call (authorization, the one
// NOT_FOUND, pages), the mapping of store errors onto platform errors, the platform admin's
// bootstrap, and the narrow database handle Store. The rules of each API group live in a part
// of their own under core/ (loadbalancers, tenancy, pools, resources, metal, substrates,
// events); parts meet only through this package and store, never through each other
// (test/repository TestCorePartsStoreSurface keeps it so).
//
// What a transition books, meters and publishes is package lifecycle's, which the reconcilers'
// writers call too. Every mutation runs in one database transaction that writes the row, the
// quota, the event, the work item and the idempotency record together; core never calls a
// provider (the reconcilers do, from the work queue).
package core

import (
	"context"
	"errors"
	"log/slog"
	"sync"

	"better-compute.dev/compute/apierr"
	"better-compute.dev/compute/authz"
	"better-compute.dev/compute/gen/go/bettercompute/compute/v1/errcode"
	"better-compute.dev/compute/netguard"
	"better-compute.dev/compute/seal"
	"better-compute.dev/compute/store"
)

// Base is what every part of core shares: the database as the narrow handle Store (never the
// whole *store.DB, so a part's store surface is what it calls, see TestCorePartsStoreSurface),
// authorization, the keyring, the log, the outbound policy and the principal cache. Make it with
// NewBase; each part (core/loadbalancers, core/tenancy, ...) holds one and adds only what it uses.
type Base struct {
	Store   Store
	Authz   authz.Authorizer
	Keyring *seal.Keyring
	Log     *slog.Logger
	// Outbound is the policy for addresses tenants name (BMCs): checked at enrollment, and
	// again by the metal reconciler at connect time. The zero value is production's.
	Outbound netguard.Policy

	// db is kept for the principal cache's credential version reads (touch), which run on the
	// pool outside any call.
	db *store.DB
	// platformSynced remembers the platform principals whose OpenFGA grant this process wrote.
	platformSynced sync.Map
	// principals answers recently authenticated tokens from memory (PrincipalCacheTTL).
	principals principalCache
}

// NewBase makes the base of the parts over db.
func NewBase(db *store.DB, az authz.Authorizer, keyring *seal.Keyring, log *slog.Logger, outbound netguard.Policy) *Base {
	if log == nil {
		log = slog.Default()
	}
	return &Base{Store: Store{db: db}, Authz: az, Keyring: keyring, Log: log, Outbound: outbound, db: db}
}

// Caller is the authenticated principal of a request.
type Caller struct {
	PrincipalID   string
	TenantID      string // the principal's home tenant; empty for platform principals
	PlatformAdmin bool
	// tokenHash is the hash of the bearer token the caller authenticated with, so that a long
	// call (a watch) can ask again whether the token still stands.
	tokenHash []byte
}

type callerKey struct{}

// WithCaller returns ctx carrying the caller.
func WithCaller(ctx context.Context, c Caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

// CallerFrom returns the request's caller.
func CallerFrom(ctx context.Context) (Caller, bool) {
	c, ok := ctx.Value(callerKey{}).(Caller)
	return c, ok && c.PrincipalID != ""
}

// RequireCaller returns the request's caller, or UNAUTHENTICATED when there is none.
func RequireCaller(ctx context.Context) (Caller, error) {
	c, ok := CallerFrom(ctx)
	if !ok {
		return Caller{}, &apierr.Error{Code: errcode.Unauthenticated, Message: "a bearer token is required"}
	}
	return c, nil
}

// StoreErr maps store sentinels onto platform errors in one place. A platform error already
// decided (NOT_FOUND of a by-id prologue, INVALID_INPUT of a rule) passes unchanged; a database
// fault (store.ErrUnavailable, store.ErrCommitUnknown, see store.TranslateError) is UNAVAILABLE
// with what the client may do; only what the store could not classify is INTERNAL.
func StoreErr(err error, what string) error {
	var pe *apierr.Error
	switch {
	case err == nil:
		return nil
	case errors.As(err, &pe):
		return pe
	case errors.Is(err, store.ErrCommitUnknown):
		return &apierr.Error{Code: errcode.Unavailable, Cause: err, Message: "the database connection was lost while the change was committing, " +
			"so it may or may not have been applied; retrying with the same idempotencyKey is safe (a create without one may have been made: list before retrying)"}
	case errors.Is(err, store.ErrUnavailable):
		return &apierr.Error{Code: errcode.Unavailable, Cause: err, Message: "the database is unavailable; nothing was changed, retry the call"}
	case errors.Is(err, store.ErrNotFound):
		return apierr.NotFoundf("%s not found", what)
	case errors.Is(err, store.ErrConflict):
		// By the constraint: a taken name is INVALID_INPUT on name, a taken BMC address on
		// bmc.address; a conflict on a key the server makes is no fault of the request (INTERNAL).
		if field, ok := store.ConflictField(err); ok {
			return &apierr.Error{Code: errcode.InvalidInput, Field: field, Message: what + " with that " + field + " already exists", Cause: err}
		}
	}
	return apierr.InternalErr(err)
}
