// Package authz decides who may do what on which Better Compute object, through
// a real OpenFGA engine.
//
// The authorization model lives in model.fga (embedded); it is written to the
// engine's store at start only when its content differs from the latest model
// there. Role grants (tenant roles, direct grants on one object) are stored
// tuples. The tenant that owns an object is never stored: callers pass the tenant
// their database names, and every check sends it as a contextual tuple, so no
// stored tuple can make an object of one tenant reachable from another.
//
// Two engines sit behind the Authorizer interface: NewEmbedded runs OpenFGA in
// process (memory datastore for tests, PostgreSQL for dev replicas sharing
// grants) and NewRemote talks to an OpenFGA cluster over its HTTP API.
// Every error fails closed: a check that errs never reports true.
package authz
