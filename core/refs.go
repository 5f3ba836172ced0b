package core

import (
	"context"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/timestamppb"

	"better-compute.dev/compute/apierr"
	"better-compute.dev/compute/authz"
	"better-compute.dev/compute/gen/go/bettercompute/compute/v1/errcode"
	"better-compute.dev/compute/store"
)

// The references several parts resolve the same way: an account (networks, certificates, a
// pool's substrate), a pool (load balancers, instances), a project (load balancers, instances,
// projects), and the stored form of the public messages.

// StoredJSON reads what a replica stored. Storage keeps the public v1 messages as protojson: v1 only
// grows (buf breaking guards it), so a row a newer replica wrote differs only by fields this one does
// not know, which it must skip rather than fail on (a rolled-back replica reads rows a newer one wrote).
var StoredJSON = protojson.UnmarshalOptions{DiscardUnknown: true}

// TenantAccount loads an account the tenant owns (else NOT_FOUND).
func TenantAccount(ctx context.Context, q store.Querier, tenantID, accountID string) (store.Account, error) {
	a, err := store.GetAccount(ctx, q, accountID)
	if err := RefErr(err, a.TenantID == tenantID, apierr.NotFoundf("provider account %s not found", accountID)); err != nil {
		return a, err
	}
	return a, nil
}

// PoolUsable is resources' poolVisibleWith's verdict without the pool's policy, for callers that do not
// read it (a load balancer create): decoding the policy is a JSON parse on every call.
func PoolUsable(p store.Pool, err error, quotaRows int64, tenantID, poolID string) error {
	nf := &apierr.Error{Code: errcode.NotFound, Field: "poolId", Message: "pool " + poolID + " not found"}
	if err := RefErr(err, true, nf); err != nil {
		return err
	}
	if p.TenantID != tenantID && quotaRows == 0 {
		return RefErr(nil, false, nf)
	}
	if p.State == "archived" {
		return apierr.State("archived", "pool %s is archived", poolID)
	}
	return nil
}

// ProjectTarget names a project of tenantID by id for the by-id prologue.
func ProjectTarget(tenantID, projectID string) Target {
	return Target{Type: authz.TypeProject, ID: projectID, Tenant: tenantID, What: "project", Field: "projectId"}
}

// TimeOrNil is t as a timestamp, nil when t is.
func TimeOrNil(t *time.Time) *timestamppb.Timestamp {
	if t == nil {
		return nil
	}
	return timestamppb.New(*t)
}
