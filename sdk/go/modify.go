package sdk

import (
	"context"
	"errors"

	"connectrpc.com/connect"

	v1 "better-compute.dev/compute/gen/go/bettercompute/compute/v1"
	c "better-compute.dev/compute/gen/go/bettercompute/compute/v1/computev1connect"
)

// ModifyAttempts bounds how often ModifyLoadBalancer reads again after another writer won.
const ModifyAttempts = 5

// ModifyLoadBalancer is a read-modify-write that never overwrites a change it did not see: it
// reads the load balancer, lets change fill an update from what it read (the parts it sets are
// the parts replaced, as MaskedUpdate; change may set UpdateMask itself), and sends it with the
// etag of that read. When another writer changed the load balancer in between (INVALID_STATE
// etagMismatch), it reads again and calls change again, up to ModifyAttempts reads. An error
// from change ends it with that error; the answer is the load balancer as updated.
func ModifyLoadBalancer(ctx context.Context, cl c.LoadBalancerServiceClient, tenantID, id string,
	change func(cur *v1.LoadBalancer, req *v1.UpdateLoadBalancerRequest) error) (*v1.LoadBalancer, error) {
	var last error
	for range ModifyAttempts {
		got, err := cl.GetLoadBalancer(ctx, connect.NewRequest(&v1.GetLoadBalancerRequest{TenantId: tenantID, LoadBalancerId: id}))
		if err != nil {
			return nil, err
		}
		cur := got.Msg.GetLoadBalancer()
		req := &v1.UpdateLoadBalancerRequest{TenantId: tenantID, LoadBalancerId: id}
		if err := change(cur, req); err != nil {
			return nil, err
		}
		req.TenantId, req.LoadBalancerId, req.Etag = tenantID, id, cur.GetEtag()
		if req.UpdateMask == nil {
			MaskedUpdate(req)
		}
		up, err := cl.UpdateLoadBalancer(ctx, connect.NewRequest(req))
		if err == nil {
			return up.Msg.GetLoadBalancer(), nil
		}
		if pe, ok := AsError(err); !ok || pe.Code != InvalidState || pe.StateReason != "etagMismatch" {
			return nil, err
		}
		last = err
	}
	return nil, errors.Join(errors.New("sdk: the load balancer kept changing under the update"), last)
}
