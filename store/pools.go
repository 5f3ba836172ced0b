package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// Account is a row of provider_accounts. TokenSealed is opened only by the reconciler.
type Account struct {
	ID          string
	TenantID    string
	Kind        string
	Name        string
	TokenSealed []byte
	APIURL      string
	CreatedAt   time.Time
}

const accountCols = `id, tenant_id, kind, name, token_sealed, api_url, created_at`

func scanAccount(r pgx.Row) (Account, error) {
	var a Account
	err := r.Scan(&a.ID, &a.TenantID, &a.Kind, &a.Name, &a.TokenSealed, &a.APIURL, &a.CreatedAt)
	return a, err
}

// InsertAccount adds a provider account.
func InsertAccount(ctx context.Context, q Querier, a Account) (Account, error) {
	return one(ctx, q, scanAccount,
		`INSERT INTO provider_accounts (id, tenant_id, kind, name, token_sealed, api_url)
		 VALUES ($1, $2, $3, $4, $5, $6) RETURNING `+accountCols,
		a.ID, a.TenantID, a.Kind, a.Name, a.TokenSealed, a.APIURL)
}

// GetAccount reads an account by id alone (reconcilers) .
func GetAccount(ctx context.Context, q Querier, id string) (Account, error) {
	return one(ctx, q, scanAccount, `SELECT `+accountCols+` FROM provider_accounts WHERE id = $1`, id)
}

// ListAccounts returns a tenant's accounts in creation order.
func ListAccounts(ctx context.Context, q Querier, tenantID string, p Page) ([]Account, error) {
	return collect(ctx, q, scanAccount,
		`SELECT `+accountCols+` FROM provider_accounts WHERE tenant_id = $1 AND ($2 = '' OR id > $2)
		  ORDER BY id LIMIT $3`, tenantID, p.afterID(), p.limit())
}

// Pool is a row of pools. Regions and Policy are JSON (Policy is protojson of PoolPolicy).
type Pool struct {
	ID        string
	TenantID  string
	AccountID string
	Name      string
	Regions   []string
	Policy    []byte
	State     string
	CreatedAt time.Time
}

const poolCols = `id, tenant_id, account_id, name, regions, policy, state, created_at`

func scanPool(r pgx.Row) (Pool, error) {
	var p Pool
	err := r.Scan(&p.ID, &p.TenantID, &p.AccountID, &p.Name, &p.Regions, &p.Policy, &p.State, &p.CreatedAt)
	return p, err
}

// InsertPool adds a pool.
func InsertPool(ctx context.Context, q Querier, p Pool) (Pool, error) {
	return one(ctx, q, scanPool,
		`INSERT INTO pools (id, tenant_id, account_id, name, regions, policy)
		 VALUES ($1, $2, $3, $4, $5, $6) RETURNING `+poolCols,
		p.ID, p.TenantID, p.AccountID, p.Name, p.Regions, p.Policy)
}

// GetPool reads a pool by id alone.
func GetPool(ctx context.Context, q Querier, id string) (Pool, error) {
	return one(ctx, q, scanPool, sqlGetPool, id)
}

const sqlGetPool = `SELECT ` + poolCols + ` FROM pools WHERE id = $1`

// ListPools returns a tenant's pools in creation order.
func ListPools(ctx context.Context, q Querier, tenantID string, p Page) ([]Pool, error) {
	return collect(ctx, q, scanPool, `SELECT `+poolCols+` FROM pools WHERE tenant_id = $1 AND ($2 = '' OR id > $2)
		  ORDER BY id LIMIT $3`, tenantID, p.afterID(), p.limit())
}

// UpdatePool replaces a pool's policy and state.
func UpdatePool(ctx context.Context, q Querier, id string, policy []byte, state string) (Pool, error) {
	return one(ctx, q, scanPool,
		`UPDATE pools SET policy = $2, state = $3 WHERE id = $1 RETURNING `+poolCols, id, policy, state)
}

// Quota is a row of quotas.
type Quota struct {
	PoolID   string
	TenantID string
	Resource string
	Limit    int64
	Used     int64
}

func scanQuota(r pgx.Row) (Quota, error) {
	var q Quota
	err := r.Scan(&q.PoolID, &q.TenantID, &q.Resource, &q.Limit, &q.Used)
	return q, err
}

// SetQuota creates or replaces the limit of one quota row, keeping what is used.
func SetQuota(ctx context.Context, q Querier, row Quota) (Quota, error) {
	return one(ctx, q, scanQuota,
		`INSERT INTO quotas (pool_id, tenant_id, resource, quota_limit) VALUES ($1, $2, $3, $4)
		 ON CONFLICT (pool_id, tenant_id, resource) DO UPDATE SET quota_limit = excluded.quota_limit
		 RETURNING pool_id, tenant_id, resource, quota_limit, used`,
		row.PoolID, row.TenantID, row.Resource, row.Limit)
}

// ListQuotas returns every quota row of a tenant, optionally of one pool.
func ListQuotas(ctx context.Context, q Querier, tenantID, poolID string) ([]Quota, error) {
	return ListQuotasPage(ctx, q, tenantID, poolID, Page{Limit: NoLimit})
}

// ListQuotasPage returns a tenant's quota rows by (pool, resource), from after p (ID the pool,
// Second the resource).
func ListQuotasPage(ctx context.Context, q Querier, tenantID, poolID string, p Page) ([]Quota, error) {
	return collect(ctx, q, scanQuota, sqlListQuotas, tenantID, poolID, p.afterID(), p.afterSecond(), p.limit())
}

const sqlListQuotas = `SELECT pool_id, tenant_id, resource, quota_limit, used FROM quotas
		  WHERE tenant_id = $1 AND ($2 = '' OR pool_id = $2) AND ($3 = '' OR (pool_id, resource) > ($3::TEXT, $4::TEXT))
		  ORDER BY pool_id, resource LIMIT $5`

// BookQuota takes one unit of a quota row. It reports false when there is no row or no room;
// the conditional UPDATE is what keeps concurrent bookings from overbooking.
func BookQuota(ctx context.Context, q Querier, poolID, tenantID, resource string) (bool, error) {
	n, err := exec(ctx, q, sqlBookQuota, poolID, tenantID, resource)
	return n == 1, err
}

const sqlBookQuota = `UPDATE quotas SET used = used + 1
		  WHERE pool_id = $1 AND tenant_id = $2 AND resource = $3 AND used < quota_limit`

// RefundQuota gives one unit back (never below zero).
func RefundQuota(ctx context.Context, q Querier, poolID, tenantID, resource string) error {
	_, err := exec(ctx, q,
		`UPDATE quotas SET used = used - 1 WHERE pool_id = $1 AND tenant_id = $2 AND resource = $3 AND used > 0`,
		poolID, tenantID, resource)
	return err
}

// Pool queues GetPool.
func (r *Reads) Pool(id string, out *Pool, found *error) {
	readOne(r, scanPool, out, found, r.shared(sqlGetPool, sqlGetPool+forShare), id)
}
