package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// LoadBalancer is a row of load_balancers. Spec is protojson of the tenant's settings.
type LoadBalancer struct {
	ID                 string
	TenantID           string
	ProjectID          string
	PoolID             string
	AccountID          string
	Name               string
	Description        string
	Scope              string
	Region             string
	SubnetID           string
	Spec               []byte
	SpecVersion        int64
	AppliedVersion     int64
	State              string
	Address            string
	AddressV6          string
	ProviderID         string
	CreatePendingAt    *time.Time
	ReachedInstanceIDs []string
	ReachedMachineIDs  []string
	LastError          string
	// ObservedDigest is the digest of what the provider showed when a pass last found the load
	// balancer converged (vps: the SHA-256 of its list encoding); nil when none was recorded.
	ObservedDigest []byte
	CreatedAt      time.Time
	UpdatedAt      time.Time
	ReadyAt        *time.Time
	DeletedAt      *time.Time
	// LastDriftAt is when a pass last repaired a change someone else made at the provider
	// (last_drift_at, migration 0086); nil: never.
	LastDriftAt *time.Time
}

const loadBalancerCols = `id, tenant_id, coalesce(project_id, ''), pool_id, account_id, name, description, scope, region,
	coalesce(subnet_id, ''), spec, spec_version, applied_version, state, address, address_v6, provider_id,
	create_pending_at, reached_instance_ids, reached_machine_ids, last_error, observed_digest, created_at, updated_at, ready_at, deleted_at,
	last_drift_at`

func scanLoadBalancer(r pgx.Row) (LoadBalancer, error) {
	var l LoadBalancer
	err := r.Scan(&l.ID, &l.TenantID, &l.ProjectID, &l.PoolID, &l.AccountID, &l.Name, &l.Description, &l.Scope,
		&l.Region, &l.SubnetID, &l.Spec, &l.SpecVersion, &l.AppliedVersion, &l.State, &l.Address, &l.AddressV6,
		&l.ProviderID, &l.CreatePendingAt, &l.ReachedInstanceIDs, &l.ReachedMachineIDs, &l.LastError,
		&l.ObservedDigest, &l.CreatedAt, &l.UpdatedAt, &l.ReadyAt, &l.DeletedAt, &l.LastDriftAt)
	return l, err
}

// InsertLoadBalancer adds a load balancer, pending.
func InsertLoadBalancer(ctx context.Context, q Querier, l LoadBalancer) (LoadBalancer, error) {
	return one(ctx, q, scanLoadBalancer, sqlInsertLoadBalancer,
		l.ID, l.TenantID, l.ProjectID, l.PoolID, l.AccountID, l.Name, l.Description, l.Scope, l.Region, l.SubnetID, l.Spec)
}

const sqlInsertLoadBalancer = sqlInsertLoadBalancerValues + ` RETURNING ` + loadBalancerCols

const sqlInsertLoadBalancerValues = `INSERT INTO load_balancers (id, tenant_id, project_id, pool_id, account_id, name, description, scope, region,
		        subnet_id, spec, state)
		 VALUES ($1, $2, nullif($3, ''), $4, $5, $6, $7, $8, $9, nullif($10, ''), $11, 'pending')`

// GetLoadBalancer reads a load balancer by id alone; callers compare its tenant.
func GetLoadBalancer(ctx context.Context, q Querier, id string) (LoadBalancer, error) {
	return one(ctx, q, scanLoadBalancer, `SELECT `+loadBalancerCols+` FROM load_balancers WHERE id = $1`, id)
}

// GetLoadBalancerForUpdate reads a load balancer and locks its row for the transaction.
func GetLoadBalancerForUpdate(ctx context.Context, q Querier, id string) (LoadBalancer, error) {
	return one(ctx, q, scanLoadBalancer, sqlLoadBalancerForUpdate, id)
}

const sqlLoadBalancerForUpdate = `SELECT ` + loadBalancerCols + ` FROM load_balancers WHERE id = $1 FOR UPDATE`

// GetLoadBalancers reads load balancers by id.
func GetLoadBalancers(ctx context.Context, q Querier, ids []string) ([]LoadBalancer, error) {
	return collect(ctx, q, scanLoadBalancer,
		`SELECT `+loadBalancerCols+` FROM load_balancers WHERE id = ANY($1) ORDER BY id`, ids)
}

// ListLoadBalancersParams filters ListLoadBalancers.
type ListLoadBalancersParams struct {
	TenantID       string
	PoolID         string
	ProjectID      string
	IncludeDeleted bool
	Limit          int     // at most MaxListLimit; 0 = 1000
	After          *Cursor // continue after this row (keyset); nil = from the first
}

// ListLoadBalancers returns a tenant's load balancers in creation order, (created_at, id), from
// after p.After: one statement, whatever the page.
func ListLoadBalancers(ctx context.Context, q Querier, p ListLoadBalancersParams) ([]LoadBalancer, error) {
	pg := Page{Limit: p.Limit, After: p.After}
	return collect(ctx, q, scanLoadBalancer,
		`SELECT `+loadBalancerCols+` FROM load_balancers
		  WHERE tenant_id = $1 AND ($2 = '' OR pool_id = $2) AND ($3 = '' OR coalesce(project_id, '') = $3)
		    AND ($4 OR state <> 'deleted')
		    AND ($6 = '' OR (created_at, id) > ($7::TIMESTAMPTZ, $6::TEXT))
		  ORDER BY created_at, id LIMIT $5`,
		p.TenantID, p.PoolID, p.ProjectID, p.IncludeDeleted, pg.limit(), pg.afterID(), pg.afterTime())
}

// UpdateLoadBalancerSpec replaces the settings, bumps the spec version and sets the state.
func UpdateLoadBalancerSpec(ctx context.Context, q Querier, id string, spec []byte, state string) (LoadBalancer, error) {
	return one(ctx, q, scanLoadBalancer, sqlUpdateLoadBalancerSpec, id, spec, state)
}

const sqlUpdateLoadBalancerSpec = `UPDATE load_balancers SET spec = $2, spec_version = spec_version + 1, state = $3, updated_at = now()
		  WHERE id = $1 RETURNING ` + loadBalancerCols

// SetLoadBalancerState sets the state alone (e.g. deleting) and bumps the spec version so the
// reconciler sees there is work.
func SetLoadBalancerState(ctx context.Context, q Querier, id, state string) (LoadBalancer, error) {
	return one(ctx, q, scanLoadBalancer, sqlSetLoadBalancerState, id, state)
}

const sqlSetLoadBalancerState = `UPDATE load_balancers SET state = $2, spec_version = spec_version + 1, updated_at = now()
		  WHERE id = $1 RETURNING ` + loadBalancerCols

// SetLoadBalancerReach replaces what a load balancer reaches and its state, bumping its spec
// version so the reconciler applies it: an instance delete takes the instance out at once, in the
// delete's own transaction, instead of waiting for the reconciler to notice.
func SetLoadBalancerReach(ctx context.Context, q Querier, id, state string, instanceIDs, machineIDs []string) (LoadBalancer, error) {
	if instanceIDs == nil {
		instanceIDs = []string{}
	}
	if machineIDs == nil {
		machineIDs = []string{}
	}
	return one(ctx, q, scanLoadBalancer,
		`UPDATE load_balancers SET state = $2, reached_instance_ids = $3, reached_machine_ids = $4,
		        spec_version = spec_version + 1, updated_at = now()
		  WHERE id = $1 RETURNING `+loadBalancerCols, id, state, instanceIDs, machineIDs)
}

// LoadBalancerObservation is what a reconciler writes after talking to the provider.
type LoadBalancerObservation struct {
	ID                 string
	State              string
	ProviderID         string
	Address            string
	AddressV6          string
	AppliedVersion     int64
	ReachedInstanceIDs []string
	ReachedMachineIDs  []string
	LastError          string
	ObservedDigest     []byte // observed_digest (nil: NULL)
	MarkReady          bool   // set ready_at if it is not set yet
	MarkDeleted        bool   // set deleted_at
	MarkDrifted        bool   // set last_drift_at: the pass repaired someone else's change
}

// RecordLoadBalancerObservation writes a reconciler's result.
func RecordLoadBalancerObservation(ctx context.Context, q Querier, o LoadBalancerObservation) (LoadBalancer, error) {
	return one(ctx, q, scanLoadBalancer, sqlRecordLoadBalancerObservation+` RETURNING `+loadBalancerCols, o.args()...)
}

const sqlRecordLoadBalancerObservation = `UPDATE load_balancers SET state = $2, provider_id = $3, address = $4, address_v6 = $5,
		        applied_version = greatest(applied_version, $6), reached_instance_ids = $7, reached_machine_ids = $8,
		        last_error = $9, observed_digest = $12, updated_at = now(),
		        ready_at = CASE WHEN $10 AND ready_at IS NULL THEN now() ELSE ready_at END,
		        deleted_at = CASE WHEN $11 THEN now() ELSE deleted_at END,
		        last_drift_at = CASE WHEN $13 THEN now() ELSE last_drift_at END,
		        create_pending_at = CASE WHEN $3 <> '' THEN NULL ELSE create_pending_at END
		  WHERE id = $1`

func (o LoadBalancerObservation) args() []any {
	if o.ReachedInstanceIDs == nil {
		o.ReachedInstanceIDs = []string{}
	}
	if o.ReachedMachineIDs == nil {
		o.ReachedMachineIDs = []string{}
	}
	return []any{o.ID, o.State, o.ProviderID, o.Address, o.AddressV6, o.AppliedVersion, o.ReachedInstanceIDs,
		o.ReachedMachineIDs, o.LastError, o.MarkReady, o.MarkDeleted, o.ObservedDigest, o.MarkDrifted}
}

// RecordLoadBalancerObservation queues RecordLoadBalancerObservation (without the row back).
func (w *Writes) RecordLoadBalancerObservation(o LoadBalancerObservation) {
	w.add("record load balancer "+o.ID, nil, sqlRecordLoadBalancerObservation, o.args()...)
}

// MarkLoadBalancerCreatePending records, before the provider is asked to create, that a create
// may be in flight: whoever finds the mark adopts by name instead of creating again.
func MarkLoadBalancerCreatePending(ctx context.Context, q Querier, id string) error {
	_, err := exec(ctx, q, sqlMarkLoadBalancerCreatePending, id)
	return err
}

const sqlMarkLoadBalancerCreatePending = `UPDATE load_balancers SET create_pending_at = coalesce(create_pending_at, now()) WHERE id = $1`

// SetLoadBalancerError records a provider error without changing anything else.
func SetLoadBalancerError(ctx context.Context, q Querier, id, state, lastError string) error {
	_, err := exec(ctx, q,
		`UPDATE load_balancers SET state = $2, last_error = $3, updated_at = now() WHERE id = $1`, id, state, lastError)
	return err
}

// ReplaceLoadBalancerTargets rewrites the instance, load balancer and certificate references of
// one load balancer: the old ones go, then InsertLoadBalancerTargets.
func ReplaceLoadBalancerTargets(ctx context.Context, q Querier, id string, instanceIDs, lbIDs, certIDs []string) error {
	return execAll(ctx, q, replaceTargetStatements(id, instanceIDs, lbIDs, certIDs))
}

// InsertLoadBalancerTargets records the references of a load balancer that has none yet (one
// created in the same transaction): no DELETE of rows that cannot exist, and no statement for
// an empty list.
func InsertLoadBalancerTargets(ctx context.Context, q Querier, id string, instanceIDs, lbIDs, certIDs []string) error {
	return execAll(ctx, q, insertTargetStatements(id, instanceIDs, lbIDs, certIDs))
}

// ReplaceLoadBalancerTargets queues ReplaceLoadBalancerTargets's statements.
func (w *Writes) ReplaceLoadBalancerTargets(id string, instanceIDs, lbIDs, certIDs []string) {
	for _, st := range replaceTargetStatements(id, instanceIDs, lbIDs, certIDs) {
		w.add("load balancer references", nil, st.sql, st.args...)
	}
}

// InsertLoadBalancerTargets queues InsertLoadBalancerTargets's statements.
func (w *Writes) InsertLoadBalancerTargets(id string, instanceIDs, lbIDs, certIDs []string) {
	for _, st := range insertTargetStatements(id, instanceIDs, lbIDs, certIDs) {
		w.add("load balancer references", nil, st.sql, st.args...)
	}
}

type statement struct {
	sql  string
	args []any
}

// execAll runs statements one after another.
func execAll(ctx context.Context, q Querier, statements []statement) error {
	for _, st := range statements {
		if _, err := exec(ctx, q, st.sql, st.args...); err != nil {
			return err
		}
	}
	return nil
}

func replaceTargetStatements(id string, instanceIDs, lbIDs, certIDs []string) []statement {
	out := []statement{
		{`DELETE FROM load_balancer_instance_targets WHERE load_balancer_id = $1`, []any{id}},
		{`DELETE FROM load_balancer_lb_targets WHERE global_id = $1`, []any{id}},
		{`DELETE FROM load_balancer_certificates WHERE load_balancer_id = $1`, []any{id}},
	}
	return append(out, insertTargetStatements(id, instanceIDs, lbIDs, certIDs)...)
}

func insertTargetStatements(id string, instanceIDs, lbIDs, certIDs []string) []statement {
	var out []statement
	for _, st := range []struct {
		ins string
		ids []string
	}{
		{`INSERT INTO load_balancer_instance_targets (load_balancer_id, instance_id) SELECT $1, unnest($2::TEXT[])`, instanceIDs},
		{`INSERT INTO load_balancer_lb_targets (global_id, regional_id) SELECT $1, unnest($2::TEXT[])`, lbIDs},
		{`INSERT INTO load_balancer_certificates (load_balancer_id, certificate_id) SELECT DISTINCT $1, unnest($2::TEXT[])`, certIDs},
	} {
		if len(st.ids) > 0 {
			out = append(out, statement{st.ins, []any{id, st.ids}})
		}
	}
	return out
}

// GlobalsTargeting returns the ids of the tenant's live global load balancers that target a
// regional one (the inUse check).
func GlobalsTargeting(ctx context.Context, q Querier, regionalID string) ([]string, error) {
	return collect(ctx, q, scanString, sqlGlobalsTargeting, regionalID)
}

const sqlGlobalsTargeting = `SELECT g.id FROM load_balancer_lb_targets t JOIN load_balancers g ON g.id = t.global_id
		  WHERE t.regional_id = $1 AND g.state NOT IN ('deleting', 'deleted') ORDER BY g.id`

// LoadBalancersReaching returns the live load balancers that may reach an instance: those naming
// it, and { pool: true } ones of its tenant, pool and region.
func LoadBalancersReaching(ctx context.Context, q Querier, inst Instance) ([]string, error) {
	return collect(ctx, q, scanString,
		`SELECT load_balancer_id FROM load_balancer_instance_targets t JOIN load_balancers l ON l.id = t.load_balancer_id
		  WHERE t.instance_id = $1 AND l.state NOT IN ('deleting', 'deleted')
		 UNION
		 SELECT id FROM load_balancers
		  WHERE tenant_id = $2 AND pool_id = $3 AND region = $4 AND scope = 'regional'
		    AND state NOT IN ('deleting', 'deleted') AND (spec->'targets'->>'pool') = 'true'
		 ORDER BY 1`,
		inst.ID, inst.TenantID, inst.PoolID, inst.Region)
}

// LockLoadBalancers locks the rows of ids FOR UPDATE in id order (the lock order among rows of
// one table, lockorder.go), for a change of a row they name that changes them too.
func LockLoadBalancers(ctx context.Context, q Querier, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	if _, err := q.Exec(ctx, `SELECT id FROM load_balancers WHERE id = ANY($1) ORDER BY id FOR UPDATE`, ids); err != nil {
		return fmt.Errorf("store: lock load balancers: %w", TranslateError(err))
	}
	return nil
}

func scanString(r pgx.Row) (string, error) {
	var s string
	err := r.Scan(&s)
	return s, err
}

// LoadBalancerPass is what a reconciler pass over a load balancer reads first, read in one
// round trip by ReadLoadBalancerPass.
type LoadBalancerPass struct {
	// LoadBalancer is the row; Found is ErrNotFound when there is none (the rest is then empty).
	LoadBalancer LoadBalancer
	Found        error
	// Account is its provider account (AccountFound: ErrNotFound when it is gone).
	Account      Account
	AccountFound error
	// PoolInstances is PoolInstances of its tenant, pool, region and subnet: what a
	// { pool: true } load balancer reaches.
	PoolInstances []Instance
	// Globals is GlobalsTargeting: the live global load balancers that target it.
	Globals []string
}

// ReadLoadBalancerPass reads a load balancer, its account, the instances its pool target
// reaches and the globals that target it in one round trip (four statements of one batch,
// outside any transaction), for a reconciler pass that would otherwise read them one after the
// other.
func ReadLoadBalancerPass(ctx context.Context, db *DB, id string) (LoadBalancerPass, error) {
	var p LoadBalancerPass
	var r Reads
	readOne(&r, scanLoadBalancer, &p.LoadBalancer, &p.Found, `SELECT `+loadBalancerCols+` FROM load_balancers WHERE id = $1`, id)
	readOne(&r, scanAccount, &p.Account, &p.AccountFound,
		`SELECT `+accountCols+` FROM provider_accounts WHERE id = (SELECT account_id FROM load_balancers WHERE id = $1)`, id)
	// The columns are instanceCols of i.
	readAll(&r, scanInstance, &p.PoolInstances, `SELECT i.id, i.tenant_id, coalesce(i.project_id, ''), i.pool_id, i.account_id, i.name, i.region,
		        coalesce(i.subnet_id, ''), i.flavor, i.machine_id, i.state, i.last_error, i.created_at FROM load_balancers AS l
		  JOIN instances AS i ON i.tenant_id = l.tenant_id AND i.pool_id = l.pool_id AND i.region = l.region
		   AND coalesce(i.subnet_id, '') = coalesce(l.subnet_id, '')
		 WHERE l.id = $1 AND i.machine_id <> '' AND i.state NOT IN ('deleting', 'deleted') ORDER BY i.id`, id)
	readAll(&r, scanString, &p.Globals, sqlGlobalsTargeting, id)
	if err := r.send(ctx, db.pool); err != nil {
		return LoadBalancerPass{}, err
	}
	return p, nil
}

// LoadBalancers queues the load balancers named by ids and those global load balancer of
// targets today.
func (r *Reads) LoadBalancers(ids []string, of string, out *[]LoadBalancer) {
	readAll(r, scanLoadBalancer, out, r.shared(sqlTargetLoadBalancers, sqlTargetLoadBalancers+forShare), ids, of)
}

const sqlTargetLoadBalancers = `SELECT ` + loadBalancerCols + ` FROM load_balancers
		WHERE id IN (SELECT unnest($1::text[]) UNION SELECT regional_id FROM load_balancer_lb_targets WHERE global_id = $2) ORDER BY id`

// LoadBalancerForUpdate queues GetLoadBalancerForUpdate.
func (r *Reads) LoadBalancerForUpdate(id string, out *LoadBalancer, found *error) {
	readOne(r, scanLoadBalancer, out, found, sqlLoadBalancerForUpdate, id)
}

// GlobalsTargeting queues GlobalsTargeting.
func (r *Reads) GlobalsTargeting(regionalID string, out *[]string) {
	readAll(r, scanString, out, sqlGlobalsTargeting, regionalID)
}

// InsertLoadBalancer queues InsertLoadBalancer; out receives the row as written. Only what the
// server makes is sent back (its creation time): the rest is what was sent and the columns'
// defaults, which newLoadBalancerRow knows (TestInsertedRowAsRead compares the two), so a
// create's answer does not carry its own settings back over the wire and through the decoders.
func (w *Writes) InsertLoadBalancer(l LoadBalancer, out *LoadBalancer) {
	w.addRow("insert load balancer", func(row pgx.Row) error {
		var created time.Time
		if err := row.Scan(&created); err != nil {
			return err
		}
		*out = newLoadBalancerRow(l, created)
		return nil
	}, sqlInsertLoadBalancerCreated,
		l.ID, l.TenantID, l.ProjectID, l.PoolID, l.AccountID, l.Name, l.Description, l.Scope, l.Region, l.SubnetID, l.Spec)
}

// sqlInsertLoadBalancerCreated is sqlInsertLoadBalancer returning the creation time alone.
const sqlInsertLoadBalancerCreated = sqlInsertLoadBalancerValues + ` RETURNING created_at`

// newLoadBalancerRow is the row sqlInsertLoadBalancer writes for l at created: l's values and the
// defaults of load_balancers' other columns. Spec is the JSON sent, which a read returns as the
// server re-spaced it (the same settings).
func newLoadBalancerRow(l LoadBalancer, created time.Time) LoadBalancer {
	return LoadBalancer{
		ID: l.ID, TenantID: l.TenantID, ProjectID: l.ProjectID, PoolID: l.PoolID, AccountID: l.AccountID, Name: l.Name,
		Description: l.Description, Scope: l.Scope, Region: l.Region, SubnetID: l.SubnetID, Spec: l.Spec,
		SpecVersion: 1, State: "pending", ReachedInstanceIDs: []string{}, ReachedMachineIDs: []string{},
		CreatedAt: created, UpdatedAt: created,
	}
}

// UpdateLoadBalancerSpec queues UpdateLoadBalancerSpec.
func (w *Writes) UpdateLoadBalancerSpec(id string, spec []byte, state string, out *LoadBalancer) {
	w.loadBalancerRow("update load balancer", out, sqlUpdateLoadBalancerSpec, id, spec, state)
}

// SetLoadBalancerState queues SetLoadBalancerState.
func (w *Writes) SetLoadBalancerState(id, state string, out *LoadBalancer) {
	w.loadBalancerRow("load balancer state", out, sqlSetLoadBalancerState, id, state)
}

// loadBalancerRow queues a write that returns a load balancer row, scanned into out.
func (w *Writes) loadBalancerRow(what string, out *LoadBalancer, sql string, args ...any) {
	w.addRow(what, func(row pgx.Row) error {
		v, err := scanLoadBalancer(row)
		*out = v
		return err
	}, sql, args...)
}
