package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// UsageRecord is a row of usage_records: an interval of metered use.
type UsageRecord struct {
	ID         string
	TenantID   string
	Meter      string
	ResourceID string
	StartedAt  time.Time
	EndedAt    *time.Time
}

// StartUsage opens a metering interval (once per meter and resource).
func StartUsage(ctx context.Context, q Querier, u UsageRecord) error {
	_, err := exec(ctx, q, sqlStartUsage, u.ID, u.TenantID, u.Meter, u.ResourceID)
	return err
}

const sqlStartUsage = `INSERT INTO usage_records (id, tenant_id, meter, resource_id, started_at) VALUES ($1, $2, $3, $4, now())
		 ON CONFLICT (meter, resource_id) DO NOTHING`

// StartUsage queues StartUsage.
func (w *Writes) StartUsage(u UsageRecord) {
	w.add("start usage "+u.Meter+"/"+u.ResourceID, nil, sqlStartUsage, u.ID, u.TenantID, u.Meter, u.ResourceID)
}

// StopUsage queues StopUsage.
func (w *Writes) StopUsage(meter, resourceID string) {
	w.add("stop usage "+meter+"/"+resourceID, nil, sqlStopUsage, meter, resourceID)
}

// StopUsage closes a metering interval if one is open.
func StopUsage(ctx context.Context, q Querier, meter, resourceID string) error {
	_, err := exec(ctx, q, sqlStopUsage, meter, resourceID)
	return err
}

const sqlStopUsage = `UPDATE usage_records SET ended_at = now() WHERE meter = $1 AND resource_id = $2 AND ended_at IS NULL`

// UsageListLimit is the most intervals one usage list answers without paging.
const UsageListLimit = 10000

// ListUsage returns a tenant's intervals overlapping [from, to): at most UsageListLimit.
func ListUsage(ctx context.Context, q Querier, tenantID, meter string, from, to time.Time) ([]UsageRecord, error) {
	return ListUsagePage(ctx, q, tenantID, meter, from, to, Page{Limit: UsageListLimit})
}

// ListUsagePage returns a tenant's intervals overlapping [from, to) by (started_at, id), from after p.
func ListUsagePage(ctx context.Context, q Querier, tenantID, meter string, from, to time.Time, p Page) ([]UsageRecord, error) {
	return collect(ctx, q, func(r pgx.Row) (UsageRecord, error) {
		var u UsageRecord
		err := r.Scan(&u.ID, &u.TenantID, &u.Meter, &u.ResourceID, &u.StartedAt, &u.EndedAt)
		return u, err
	}, `SELECT id, tenant_id, meter, resource_id, started_at, ended_at FROM usage_records
	     WHERE tenant_id = $1 AND ($2 = '' OR meter = $2) AND started_at < $4 AND (ended_at IS NULL OR ended_at > $3)
	       AND ($5 = '' OR (started_at, id) > ($6::TIMESTAMPTZ, $5::TEXT))
	     ORDER BY started_at, id LIMIT $7`, tenantID, meter, from, to, p.afterID(), p.afterTime(), p.limit())
}
