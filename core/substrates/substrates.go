package substrates

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"slices"
	"strconv"

	"google.golang.org/protobuf/types/known/timestamppb"

	"better-compute.dev/compute/apierr"
	"better-compute.dev/compute/authz"
	"better-compute.dev/compute/contract"
	"better-compute.dev/compute/core"
	v1 "better-compute.dev/compute/gen/go/bettercompute/compute/v1"
	"better-compute.dev/compute/gen/go/bettercompute/compute/v1/errcode"
	"better-compute.dev/compute/ids"
	"better-compute.dev/compute/store"
)

// SubstrateNodePrefix is the id prefix of a node that joined a substrate's pool.
const SubstrateNodePrefix = "snode_"

// GetSubstrate returns the substrate of one pool of the tenant.
func (s *Service) GetSubstrate(ctx context.Context, r *v1.GetSubstrateRequest) (*v1.Substrate, error) {
	c, err := core.RequireCaller(ctx)
	if err != nil {
		return nil, err
	}
	sub, err := store.GetSubstrateByPool(ctx, s.base.Store.Q(), r.GetPoolId())
	// The caller names the pool; the authorization object is the substrate, whose id a caller
	// that may not read it must not learn (the NOT_FOUND names the pool).
	t := core.Target{Type: authz.TypePoolSubstrate, ID: r.GetPoolId(), Object: sub.ID, Tenant: r.GetTenantId(), What: "substrate of pool", Field: "poolId"}
	if _, err := s.base.AuthorizeOwned(ctx, c, t, sub.TenantID, err, authz.SubstratesRead, ""); err != nil {
		return nil, err
	}
	nodes, err := store.ListSubstrateNodes(ctx, s.base.Store.Q(), []string{sub.ID})
	if err != nil {
		return nil, core.StoreErr(err, "substrate")
	}
	return substrateProto(sub, nodes), nil
}

// ListSubstrates returns the tenant's substrates in pool order (ListSubstratesPage without the token).
func (s *Service) ListSubstrates(ctx context.Context, r *v1.ListSubstratesRequest) ([]*v1.Substrate, error) {
	subs, _, err := s.ListSubstratesPage(ctx, r)
	return subs, err
}

// ListSubstratesPage returns at most 1000 substrates, or one page, with their nodes (one more
// statement for the page), and the next page's token.
func (s *Service) ListSubstratesPage(ctx context.Context, r *v1.ListSubstratesRequest) ([]*v1.Substrate, string, error) {
	return core.ListPage(ctx, s.base, r, core.Listing[store.Substrate]{
		Method: "substrates", What: "substrate", Perm: authz.SubstratesRead, Access: core.PlatformReads, Tenant: r.GetTenantId(),
		Filters: []string{strconv.FormatBool(r.GetIncludeDeleted())},
		Key:     func(sub store.Substrate) store.Cursor { return core.ByID(sub.PoolID) },
		Query: func(p store.Page) ([]store.Substrate, error) {
			return store.ListSubstrates(ctx, s.base.Store.Q(), r.GetTenantId(), r.GetIncludeDeleted(), p)
		},
	}, func(subs []store.Substrate) ([]*v1.Substrate, error) {
		idsOf := make([]string, len(subs))
		for i, sub := range subs {
			idsOf[i] = sub.ID
		}
		nodes, err := store.ListSubstrateNodes(ctx, s.base.Store.Q(), idsOf)
		if err != nil {
			return nil, core.StoreErr(err, "substrate")
		}
		bySub := map[string][]store.SubstrateNode{}
		for _, n := range nodes {
			bySub[n.SubstrateID] = append(bySub[n.SubstrateID], n)
		}
		out := make([]*v1.Substrate, len(subs))
		for i, sub := range subs {
			out[i] = substrateProto(sub, bySub[sub.ID])
		}
		return out, nil
	})
}

// errBadJoin is the one answer to every refused join, so a caller learns nothing about which
// part (pool, token, substrate state) was wrong.
var errBadJoin = &apierr.Error{Code: errcode.Unauthenticated, Message: "the join token is not valid for this pool"}

// JoinNode records a cluster node as a machine of the pool whose join token it presents. There
// is no caller principal: the token is the credential. It is compared, as a SHA-256, in
// constant time with the stored one; an unknown pool is compared against a dummy hash, so the
// answer takes as long either way. The reconciler is queued to check the node against the
// provider's node pools (a node that is not in one of them is removed again).
func (s *Service) JoinNode(ctx context.Context, r *v1.JoinNodeRequest) (*v1.JoinNodeResponse, error) {
	got := sha256.Sum256([]byte(r.GetToken()))
	var out store.SubstrateNode
	var tenantID string
	err := s.base.Store.ExecuteTx(ctx, func(tx store.Tx) error {
		sub, err := store.GetSubstrateByPool(ctx, tx, r.GetPoolId())
		want := make([]byte, sha256.Size)
		if err == nil {
			want = sub.JoinTokenHash
		} else if !errors.Is(err, store.ErrNotFound) {
			return err
		}
		match := subtle.ConstantTimeCompare(got[:], want) == 1
		if err != nil || !match || sub.State == "deleting" || sub.State == "deleted" {
			return errBadJoin
		}
		if !slices.ContainsFunc(sub.NodePools, func(np store.SubstrateNodePool) bool { return np.Name == r.GetNodePool() }) {
			return apierr.Invalid("nodePool", "node pool %s is not one of the substrate's", r.GetNodePool())
		}
		tenantID = sub.TenantID
		out, err = store.UpsertSubstrateNode(ctx, tx, store.SubstrateNode{
			ID: ids.New(SubstrateNodePrefix), SubstrateID: sub.ID, TenantID: sub.TenantID, PoolID: sub.PoolID,
			Name: r.GetNodeName(), ProviderNodeID: r.GetProviderNodeId(), NodePool: r.GetNodePool(),
		})
		if err != nil {
			return err
		}
		return store.Enqueue(ctx, tx, contract.SubstrateKind, sub.PoolID, nil)
	})
	if err != nil {
		return nil, core.StoreErr(err, "substrate node")
	}
	return &v1.JoinNodeResponse{TenantId: tenantID, PoolId: out.PoolID, Node: substrateNodeProto(out)}, nil
}

func substrateProto(sub store.Substrate, nodes []store.SubstrateNode) *v1.Substrate {
	out := &v1.Substrate{
		Id: sub.ID, TenantId: sub.TenantID, PoolId: sub.PoolID, AccountId: sub.AccountID, State: sub.State,
		ClusterId: sub.ClusterID, LastError: sub.LastError,
		CreateTime: timestamppb.New(sub.CreatedAt), UpdateTime: timestamppb.New(sub.UpdatedAt),
	}
	out.ClusterOrigin = contract.ClusterOrigin(sub)
	for _, np := range sub.NodePools {
		out.NodePools = append(out.NodePools, &v1.SubstrateNodePool{
			Name: np.Name, Flavor: np.Flavor, Size: np.Size, Count: int32(np.Count), ProviderId: np.ProviderID,
		})
	}
	for _, o := range sub.Objects {
		out.Objects = append(out.Objects, &v1.SubstrateObject{Kind: o.Kind, Namespace: o.Namespace, Name: o.Name})
	}
	for _, c := range sub.Conflicts {
		out.Conflicts = append(out.Conflicts, &v1.SubstrateConflict{Kind: c.Kind, Namespace: c.Namespace, Name: c.Name, Reason: c.Reason})
	}
	for _, n := range nodes {
		out.Nodes = append(out.Nodes, substrateNodeProto(n))
	}
	return out
}

func substrateNodeProto(n store.SubstrateNode) *v1.SubstrateNode {
	return &v1.SubstrateNode{Id: n.ID, Name: n.Name, ProviderNodeId: n.ProviderNodeID, NodePool: n.NodePool, JoinTime: timestamppb.New(n.JoinedAt)}
}
