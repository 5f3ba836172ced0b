package loadbalancers

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"better-compute.dev/compute/apierr"
	"better-compute.dev/compute/contract"
	"better-compute.dev/compute/core"
	v1 "better-compute.dev/compute/gen/go/bettercompute/compute/v1"
	"better-compute.dev/compute/store"
)

// loadBalancerProto is the tenant's view of a row.
func loadBalancerProto(row store.LoadBalancer) (*v1.LoadBalancer, error) {
	lb, err := contract.DecodeLoadBalancerSpec(row.Spec)
	if err != nil {
		return nil, err
	}
	return loadBalancerView(row, lb), nil
}

// loadBalancerView fills spec, the row's settings as a message, with the row's columns.
func loadBalancerView(row store.LoadBalancer, lb *v1.LoadBalancer) *v1.LoadBalancer {
	lb.Id, lb.TenantId, lb.ProjectId, lb.PoolId, lb.AccountId = row.ID, row.TenantID, row.ProjectID, row.PoolID, row.AccountID
	lb.Name, lb.Description, lb.Scope, lb.Region, lb.SubnetId = row.Name, row.Description, row.Scope, row.Region, row.SubnetID
	lb.State, lb.Address, lb.AddressV6, lb.LastError = row.State, row.Address, row.AddressV6, row.LastError
	lb.ReachedInstanceIds = row.ReachedInstanceIDs
	lb.CreateTime, lb.UpdateTime = timestamppb.New(row.CreatedAt), timestamppb.New(row.UpdatedAt)
	lb.ReadyTime, lb.DeleteTime = core.TimeOrNil(row.ReadyAt), core.TimeOrNil(row.DeletedAt)
	lb.LastDriftTime = core.TimeOrNil(row.LastDriftAt)
	lb.Etag = loadBalancerEtag(row)
	return lb
}

// loadBalancerEtag names the version of a load balancer: every change of its row's settings or
// state grows spec_version. Opaque to callers (a digest of the id and the version), so nobody
// builds on its shape.
func loadBalancerEtag(row store.LoadBalancer) string {
	sum := sha256.Sum256([]byte(row.ID + "/" + strconv.FormatInt(row.SpecVersion, 10)))
	return hex.EncodeToString(sum[:8])
}

// requestHash digests a create request deterministically for idempotency.
func requestHash(m proto.Message) ([]byte, error) {
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		return nil, apierr.InternalErr(err)
	}
	return store.HashRequest(b), nil
}
