package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// SubstrateNodePool is one node pool a substrate keeps on its cluster for a flavor (JSON in
// substrates.node_pools).
type SubstrateNodePool struct {
	Name       string `json:"name"`
	Flavor     string `json:"flavor"`
	Size       string `json:"size"`
	Count      int    `json:"count"`
	ProviderID string `json:"providerId,omitempty"`
	// Ready: the provider reports as many nodes as Count, every one running.
	Ready bool `json:"ready,omitempty"`
}

// SubstrateObject is a Kubernetes object a substrate applied (JSON in substrates.objects). UID
// is the object's uid when it was last applied: deletes are preconditioned on it, so an object
// someone replaced under the same name is never deleted.
type SubstrateObject struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	UID       string `json:"uid,omitempty"`
}

// SubstrateConflict is an object of a name the substrate would apply that it did not create
// (JSON in substrates.conflicts).
type SubstrateConflict struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	Reason    string `json:"reason"`
}

// Substrate is a row of substrates. JoinTokenHash and JoinTokenSealed are never returned by the
// API.
type Substrate struct {
	ID              string
	TenantID        string
	PoolID          string
	State           string
	AccountID       string
	Mode            string
	ClusterID       string
	ClusterCreated  bool
	CreatePendingAt *time.Time
	NodePools       []SubstrateNodePool
	Objects         []SubstrateObject
	Conflicts       []SubstrateConflict
	JoinTokenHash   []byte
	JoinTokenSealed []byte
	LastError       string
	CreatedAt       time.Time
	UpdatedAt       time.Time
	DeletedAt       *time.Time
}

const substrateCols = `id, tenant_id, pool_id, state, account_id, mode, cluster_id, cluster_created, create_pending_at,
	node_pools, objects, conflicts, join_token_hash, join_token_sealed, last_error, created_at, updated_at, deleted_at`

func scanSubstrate(r pgx.Row) (Substrate, error) {
	var s Substrate
	err := r.Scan(&s.ID, &s.TenantID, &s.PoolID, &s.State, &s.AccountID, &s.Mode, &s.ClusterID, &s.ClusterCreated,
		&s.CreatePendingAt, &s.NodePools, &s.Objects, &s.Conflicts, &s.JoinTokenHash, &s.JoinTokenSealed,
		&s.LastError, &s.CreatedAt, &s.UpdatedAt, &s.DeletedAt)
	return s, err
}

// InsertSubstrate adds the substrate of a pool, pending, with its join token.
func InsertSubstrate(ctx context.Context, q Querier, s Substrate) (Substrate, error) {
	return one(ctx, q, scanSubstrate,
		`INSERT INTO substrates (id, tenant_id, pool_id, join_token_hash, join_token_sealed)
		 VALUES ($1, $2, $3, $4, $5) RETURNING `+substrateCols,
		s.ID, s.TenantID, s.PoolID, s.JoinTokenHash, s.JoinTokenSealed)
}

// GetSubstrateByPool reads the substrate of a pool; ErrNotFound when the pool never had one.
func GetSubstrateByPool(ctx context.Context, q Querier, poolID string) (Substrate, error) {
	return one(ctx, q, scanSubstrate, `SELECT `+substrateCols+` FROM substrates WHERE pool_id = $1`, poolID)
}

// GetSubstrateByPoolForUpdate reads the substrate of a pool and locks its row.
func GetSubstrateByPoolForUpdate(ctx context.Context, q Querier, poolID string) (Substrate, error) {
	return one(ctx, q, scanSubstrate, `SELECT `+substrateCols+` FROM substrates WHERE pool_id = $1 FOR UPDATE`, poolID)
}

// ListSubstrates returns a tenant's substrates in pool order (pools sort by creation), deleted
// ones only when asked.
// A page continues after p's ID, a pool id (a pool has one substrate).
func ListSubstrates(ctx context.Context, q Querier, tenantID string, includeDeleted bool, p Page) ([]Substrate, error) {
	return collect(ctx, q, scanSubstrate,
		`SELECT `+substrateCols+` FROM substrates WHERE tenant_id = $1 AND ($2 OR state <> 'deleted')
		   AND ($3 = '' OR pool_id > $3)
		 ORDER BY pool_id LIMIT $4`, tenantID, includeDeleted, p.afterID(), p.limit())
}

// ReviveSubstrate makes a deleted (or torn-down) substrate pending again with a fresh join
// token: a pool whose policy gains a substrate again starts over, and nodes holding the old
// token cannot join.
func ReviveSubstrate(ctx context.Context, q Querier, id string, tokenHash, tokenSealed []byte) (Substrate, error) {
	return one(ctx, q, scanSubstrate,
		`UPDATE substrates SET state = 'pending', join_token_hash = $2, join_token_sealed = $3, last_error = '',
		        conflicts = '[]', deleted_at = NULL, updated_at = now()
		  WHERE id = $1 RETURNING `+substrateCols, id, tokenHash, tokenSealed)
}

// SaveSubstrate writes what the reconciler learned: every field it owns. A deleted state stamps
// deleted_at.
func SaveSubstrate(ctx context.Context, q Querier, s Substrate) error {
	_, err := exec(ctx, q,
		`UPDATE substrates SET state = $2, account_id = $3, mode = $4, cluster_id = $5, cluster_created = $6,
		        create_pending_at = $7, node_pools = $8, objects = $9, conflicts = $10, last_error = $11,
		        updated_at = now(), deleted_at = CASE WHEN $2 = 'deleted' THEN coalesce(deleted_at, now()) ELSE NULL END
		  WHERE id = $1`,
		s.ID, s.State, s.AccountID, s.Mode, s.ClusterID, s.ClusterCreated, s.CreatePendingAt,
		nonNil(s.NodePools), nonNil(s.Objects), nonNil(s.Conflicts), s.LastError)
	return err
}

// MarkSubstrateCreatePending stamps the durable create-pending mark (database clock).
func MarkSubstrateCreatePending(ctx context.Context, q Querier, id, accountID string) error {
	_, err := exec(ctx, q,
		`UPDATE substrates SET create_pending_at = now(), account_id = $2, mode = 'create', updated_at = now() WHERE id = $1`,
		id, accountID)
	return err
}

// nonNil turns a nil slice into an empty one, so a JSONB column gets [] rather than null.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// SubstrateNode is a row of substrate_nodes: a cluster node that joined the pool.
type SubstrateNode struct {
	ID             string
	SubstrateID    string
	TenantID       string
	PoolID         string
	Name           string
	ProviderNodeID string
	NodePool       string
	JoinedAt       time.Time
	LastSeenAt     time.Time
}

const substrateNodeCols = `id, substrate_id, tenant_id, pool_id, name, provider_node_id, node_pool, joined_at, last_seen_at`

func scanSubstrateNode(r pgx.Row) (SubstrateNode, error) {
	var n SubstrateNode
	err := r.Scan(&n.ID, &n.SubstrateID, &n.TenantID, &n.PoolID, &n.Name, &n.ProviderNodeID, &n.NodePool, &n.JoinedAt, &n.LastSeenAt)
	return n, err
}

// UpsertSubstrateNode records a joined node; a node joining again under its name keeps its id
// and has its provider id, node pool and last-seen time refreshed.
func UpsertSubstrateNode(ctx context.Context, q Querier, n SubstrateNode) (SubstrateNode, error) {
	return one(ctx, q, scanSubstrateNode,
		`INSERT INTO substrate_nodes (id, substrate_id, tenant_id, pool_id, name, provider_node_id, node_pool)
		 VALUES ($1, $2, $3, $4, $5, $6, $7)
		 ON CONFLICT (substrate_id, name) DO UPDATE SET provider_node_id = excluded.provider_node_id,
		        node_pool = excluded.node_pool, last_seen_at = now()
		 RETURNING `+substrateNodeCols,
		n.ID, n.SubstrateID, n.TenantID, n.PoolID, n.Name, n.ProviderNodeID, n.NodePool)
}

// ListSubstrateNodes returns the joined nodes of substrates, in join order.
func ListSubstrateNodes(ctx context.Context, q Querier, substrateIDs []string) ([]SubstrateNode, error) {
	return collect(ctx, q, scanSubstrateNode,
		`SELECT `+substrateNodeCols+` FROM substrate_nodes WHERE substrate_id = ANY($1) ORDER BY id`, substrateIDs)
}

// PruneSubstrateNodes removes the joined nodes of a substrate whose provider node id is not in
// keep (nil keep removes them all) and reports how many went.
func PruneSubstrateNodes(ctx context.Context, q Querier, substrateID string, keep []string) (int64, error) {
	return exec(ctx, q,
		`DELETE FROM substrate_nodes WHERE substrate_id = $1 AND NOT (provider_node_id = ANY($2))`,
		substrateID, nonNil(keep))
}
