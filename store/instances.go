package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// Instances queues the instances named by ids and, when of is not "", those load balancer of
// targets today (an update re-checks the targets it keeps).
func (r *Reads) Instances(ids []string, of string, out *[]Instance) {
	readAll(r, scanInstance, out, r.shared(sqlTargetInstances, sqlTargetInstances+forShare), ids, of)
}

const sqlTargetInstances = `SELECT ` + instanceCols + ` FROM instances
		WHERE id IN (SELECT unnest($1::text[]) UNION SELECT instance_id FROM load_balancer_instance_targets WHERE load_balancer_id = $2) ORDER BY id`

// Instance is a row of instances.
type Instance struct {
	ID        string
	TenantID  string
	ProjectID string
	PoolID    string
	AccountID string
	Name      string
	Region    string
	SubnetID  string
	Flavor    string
	MachineID string
	State     string
	LastError string
	CreatedAt time.Time
}

const instanceCols = `id, tenant_id, coalesce(project_id, ''), pool_id, account_id, name, region, coalesce(subnet_id, ''),
	flavor, machine_id, state, last_error, created_at`

func scanInstance(r pgx.Row) (Instance, error) {
	var i Instance
	err := r.Scan(&i.ID, &i.TenantID, &i.ProjectID, &i.PoolID, &i.AccountID, &i.Name, &i.Region, &i.SubnetID,
		&i.Flavor, &i.MachineID, &i.State, &i.LastError, &i.CreatedAt)
	return i, err
}

// InsertInstance adds an instance, pending.
func InsertInstance(ctx context.Context, q Querier, i Instance) (Instance, error) {
	return one(ctx, q, scanInstance,
		`INSERT INTO instances (id, tenant_id, project_id, pool_id, account_id, name, region, subnet_id, flavor)
		 VALUES ($1, $2, nullif($3, ''), $4, $5, $6, $7, nullif($8, ''), $9) RETURNING `+instanceCols,
		i.ID, i.TenantID, i.ProjectID, i.PoolID, i.AccountID, i.Name, i.Region, i.SubnetID, i.Flavor)
}

// GetInstance reads an instance by id alone.
func GetInstance(ctx context.Context, q Querier, id string) (Instance, error) {
	return one(ctx, q, scanInstance, `SELECT `+instanceCols+` FROM instances WHERE id = $1`, id)
}

// GetInstances reads instances by id; missing ids are simply absent from the result.
func GetInstances(ctx context.Context, q Querier, ids []string) ([]Instance, error) {
	return collect(ctx, q, scanInstance, `SELECT `+instanceCols+` FROM instances WHERE id = ANY($1) ORDER BY id`, ids)
}

// ListInstances returns a tenant's instances in creation order.
func ListInstances(ctx context.Context, q Querier, tenantID, poolID string, includeDeleted bool, p Page) ([]Instance, error) {
	return collect(ctx, q, scanInstance,
		`SELECT `+instanceCols+` FROM instances WHERE tenant_id = $1 AND ($2 = '' OR pool_id = $2)
		  AND ($3 OR state <> 'deleted') AND ($4 = '' OR id > $4) ORDER BY id LIMIT $5`,
		tenantID, poolID, includeDeleted, p.afterID(), p.limit())
}

// PoolInstances returns the instances a { pool: true } load balancer reaches: the tenant's, in the
// pool and region, on the subnet (or, with subnetID empty, on no tenant network), with a machine
// and not being deleted.
func PoolInstances(ctx context.Context, q Querier, tenantID, poolID, region, subnetID string) ([]Instance, error) {
	return collect(ctx, q, scanInstance,
		`SELECT `+instanceCols+` FROM instances
		  WHERE tenant_id = $1 AND pool_id = $2 AND region = $3 AND coalesce(subnet_id, '') = $4
		    AND machine_id <> '' AND state NOT IN ('deleting', 'deleted') ORDER BY id`,
		tenantID, poolID, region, subnetID)
}

// SetInstanceState records an instance's state and machine.
func SetInstanceState(ctx context.Context, q Querier, id, state, machineID, lastError string) error {
	_, err := exec(ctx, q,
		`UPDATE instances SET state = $2, machine_id = CASE WHEN $3 = '' THEN machine_id ELSE $3 END, last_error = $4,
		        deleted_at = CASE WHEN $2 = 'deleted' THEN now() ELSE deleted_at END WHERE id = $1`,
		id, state, machineID, lastError)
	return err
}

// GetInstanceForUpdate reads an instance and locks its row for the transaction.
func GetInstanceForUpdate(ctx context.Context, q Querier, id string) (Instance, error) {
	return one(ctx, q, scanInstance, `SELECT `+instanceCols+` FROM instances WHERE id = $1 FOR UPDATE`, id)
}
