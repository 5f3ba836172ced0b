package contract

import (
	"context"
	"fmt"

	"better-compute.dev/compute/lifecycle"
	"better-compute.dev/compute/store"
)

// AppendSubstrateEvent writes an event of a substrate in the caller's transaction. The resource
// id is the substrate id (psub_...); the data names the pool (poolId), and ready, updated and
// error also carry the cluster (clusterId, clusterOrigin) and its node pools, so a tenant can
// follow a pool's cluster from the events alone.
func AppendSubstrateEvent(ctx context.Context, q store.Querier, sub store.Substrate, typ string) error {
	data := map[string]any{"poolId": sub.PoolID}
	switch typ {
	case lifecycle.EventSubstrateReady, lifecycle.EventSubstrateUpdated, lifecycle.EventSubstrateError:
		data["clusterId"] = sub.ClusterID
		data["clusterOrigin"] = ClusterOrigin(sub)
		pools := make([]any, 0, len(sub.NodePools))
		for _, np := range sub.NodePools {
			pools = append(pools, nodePoolData(np))
		}
		data["nodePools"] = pools
	}
	if typ == lifecycle.EventSubstrateError {
		data["error"] = sub.LastError
	}
	t, ok := lifecycle.Substrate.TransitionOf(typ)
	if !ok {
		return fmt.Errorf("contract: %s is no event of a substrate's lifecycle", typ)
	}
	return lifecycle.Substrate.Apply(ctx, q, t, lifecycle.Subject{TenantID: sub.TenantID, PoolID: sub.PoolID, ID: sub.ID}, data)
}

// AppendSubstrateNodePoolEvent writes an event of one of a substrate's node pools in the
// caller's transaction, under the substrate's id; the data carries the pool id, the cluster id
// and the node pool (name, flavor, size, count, id, ready), and errMsg, the refusal of a
// nodePool.error ("" otherwise).
func AppendSubstrateNodePoolEvent(ctx context.Context, q store.Querier, sub store.Substrate, np store.SubstrateNodePool, typ, errMsg string) error {
	data := map[string]any{"poolId": sub.PoolID, "clusterId": sub.ClusterID, "nodePool": nodePoolData(np)}
	if errMsg != "" {
		data["error"] = errMsg
	}
	t, ok := lifecycle.SubstrateNodePool.TransitionOf(typ)
	if !ok {
		return fmt.Errorf("contract: %s is no event of a substrate's node pool", typ)
	}
	return lifecycle.SubstrateNodePool.Apply(ctx, q, t, lifecycle.Subject{TenantID: sub.TenantID, PoolID: sub.PoolID, ID: sub.ID}, data)
}

func nodePoolData(np store.SubstrateNodePool) map[string]any {
	return map[string]any{"name": np.Name, "flavor": np.Flavor, "size": np.Size, "count": float64(np.Count), "id": np.ProviderID, "ready": np.Ready}
}

// ClusterOrigin says where a substrate's cluster came from: "created" by the reconciler,
// "adopted" (found by name), or "" while it has none.
func ClusterOrigin(sub store.Substrate) string {
	switch {
	case sub.ClusterID == "":
		return ""
	case sub.ClusterCreated:
		return "created"
	}
	return "adopted"
}
