package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// Network is a row of networks.
type Network struct {
	ID        string
	TenantID  string
	AccountID string
	Name      string
	CreatedAt time.Time
}

func scanNetwork(r pgx.Row) (Network, error) {
	var n Network
	err := r.Scan(&n.ID, &n.TenantID, &n.AccountID, &n.Name, &n.CreatedAt)
	return n, err
}

// InsertNetwork adds a network.
func InsertNetwork(ctx context.Context, q Querier, n Network) (Network, error) {
	return one(ctx, q, scanNetwork,
		`INSERT INTO networks (id, tenant_id, account_id, name) VALUES ($1, $2, $3, $4)
		 RETURNING id, tenant_id, account_id, name, created_at`, n.ID, n.TenantID, n.AccountID, n.Name)
}

// GetNetwork reads a network by id alone.
func GetNetwork(ctx context.Context, q Querier, id string) (Network, error) {
	return one(ctx, q, scanNetwork, `SELECT id, tenant_id, account_id, name, created_at FROM networks WHERE id = $1`, id)
}

// ListNetworks returns a tenant's networks in creation order (ids are time-ordered), from after p.
func ListNetworks(ctx context.Context, q Querier, tenantID string, p Page) ([]Network, error) {
	return collect(ctx, q, scanNetwork,
		`SELECT id, tenant_id, account_id, name, created_at FROM networks WHERE tenant_id = $1 AND ($2 = '' OR id > $2)
		  ORDER BY id LIMIT $3`, tenantID, p.afterID(), p.limit())
}

// Subnet is a row of subnets.
type Subnet struct {
	ID         string
	TenantID   string
	NetworkID  string
	AccountID  string
	Name       string
	Region     string
	IPRange    string
	State      string
	ProviderID string
	LastError  string
	CreatedAt  time.Time
}

const subnetCols = `id, tenant_id, network_id, account_id, name, region, ip_range, state, provider_id, last_error, created_at`

func scanSubnet(r pgx.Row) (Subnet, error) {
	var s Subnet
	err := r.Scan(&s.ID, &s.TenantID, &s.NetworkID, &s.AccountID, &s.Name, &s.Region, &s.IPRange, &s.State,
		&s.ProviderID, &s.LastError, &s.CreatedAt)
	return s, err
}

// InsertSubnet adds a subnet, pending.
func InsertSubnet(ctx context.Context, q Querier, s Subnet) (Subnet, error) {
	return one(ctx, q, scanSubnet,
		`INSERT INTO subnets (id, tenant_id, network_id, account_id, name, region, ip_range)
		 VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING `+subnetCols,
		s.ID, s.TenantID, s.NetworkID, s.AccountID, s.Name, s.Region, s.IPRange)
}

// GetSubnet reads a subnet by id alone.
func GetSubnet(ctx context.Context, q Querier, id string) (Subnet, error) {
	return one(ctx, q, scanSubnet, sqlGetSubnet, id)
}

const sqlGetSubnet = `SELECT ` + subnetCols + ` FROM subnets WHERE id = $1`

// ListSubnets returns a tenant's subnets in creation order, optionally of one network.
func ListSubnets(ctx context.Context, q Querier, tenantID, networkID string, p Page) ([]Subnet, error) {
	return collect(ctx, q, scanSubnet,
		`SELECT `+subnetCols+` FROM subnets WHERE tenant_id = $1 AND ($2 = '' OR network_id = $2)
		  AND state <> 'deleted' AND ($3 = '' OR id > $3) ORDER BY id LIMIT $4`, tenantID, networkID, p.afterID(), p.limit())
}

// SetSubnetState records a subnet's state as the reconciler or a verb sets it.
func SetSubnetState(ctx context.Context, q Querier, id, state, providerID, lastError string) error {
	_, err := exec(ctx, q,
		`UPDATE subnets SET state = $2, provider_id = CASE WHEN $3 = '' THEN provider_id ELSE $3 END, last_error = $4,
		        deleted_at = CASE WHEN $2 = 'deleted' THEN now() ELSE deleted_at END WHERE id = $1`,
		id, state, providerID, lastError)
	return err
}

// SubnetInUse reports whether a live instance or load balancer is on the subnet.
func SubnetInUse(ctx context.Context, q Querier, id string) (bool, error) {
	var n int
	err := q.QueryRow(ctx,
		`SELECT (SELECT count(*) FROM instances WHERE subnet_id = $1 AND state NOT IN ('deleting', 'deleted'))
		      + (SELECT count(*) FROM load_balancers WHERE subnet_id = $1 AND state <> 'deleted')`, id).Scan(&n)
	return n > 0, TranslateError(err)
}

// Subnet queues GetSubnet.
func (r *Reads) Subnet(id string, out *Subnet, found *error) {
	readOne(r, scanSubnet, out, found, r.shared(sqlGetSubnet, sqlGetSubnet+forShare), id)
}

// SubnetWaiters returns the ids of the instances and load balancers on a subnet that have not
// reached the provider yet (they wait for its VPC).
func SubnetWaiters(ctx context.Context, q Querier, subnetID string) ([]string, error) {
	return collect(ctx, q, scanString,
		`SELECT id FROM instances WHERE subnet_id = $1 AND state = 'pending'
		 UNION
		 SELECT id FROM load_balancers WHERE subnet_id = $1 AND state NOT IN ('deleting', 'deleted')
		 ORDER BY 1`, subnetID)
}

// GetSubnetForUpdate reads a subnet and locks its row for the transaction.
func GetSubnetForUpdate(ctx context.Context, q Querier, id string) (Subnet, error) {
	return one(ctx, q, scanSubnet, `SELECT `+subnetCols+` FROM subnets WHERE id = $1 FOR UPDATE`, id)
}
