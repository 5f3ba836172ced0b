package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// The work-queue invariant: every provider-side resource (load balancer, certificate, instance,
// subnet, cluster, node pool) that is not resting has a due work item, that is a work_items row
// of its reconciler with a due time (held or not). Resting means there is nothing for a
// reconciler to do until a request changes the resource: ready with nothing to apply (a load
// balancer whose provider holds its latest spec, an instance running on its machine, a cluster
// whose node pools all report ready), error, or deleted. A resource that is not resting and has
// no due item is forgotten: nothing runs its reconciler until something else touches it.
//
// The writes keep the invariant: a request queues the resource in the transaction that moves it
// out of a resting state; a reconciler's pass keeps its item due until the write that moves the
// resource to a resting state has committed (Complete after the fenced write, Requeue while it
// waits). The queries below find the resources that break it, one per kind: the metric
// bc_resources_unqueued reports their counts at every scrape, the periodic safety net queues
// them, and reconciletest.AssertQueued fails a test that leaves one. Each reads only the rows
// that are not resting, through the partial indexes of migration 0072, so its cost follows what
// is in flight, not how many resources exist.

// UnqueuedKind names a kind of provider-side resource the invariant covers.
type UnqueuedKind string

// The kinds of UnqueuedKinds, as the metric labels them.
const (
	UnqueuedLoadBalancer UnqueuedKind = "load_balancer"
	UnqueuedCertificate  UnqueuedKind = "certificate"
	UnqueuedInstance     UnqueuedKind = "instance"
	UnqueuedSubnet       UnqueuedKind = "subnet"
	UnqueuedCluster      UnqueuedKind = "cluster"
	UnqueuedNodePool     UnqueuedKind = "node_pool"
)

// UnqueuedKinds are every kind, in the order the metric and the tests report them.
var UnqueuedKinds = []UnqueuedKind{
	UnqueuedLoadBalancer, UnqueuedCertificate, UnqueuedInstance, UnqueuedSubnet, UnqueuedCluster, UnqueuedNodePool,
}

// WorkKinds are the work kinds the resources are queued under: the vps reconciler's (resource
// ids are the rows' ids) and the substrates reconciler's (resource ids are pool ids). They are
// the callers' (core's) names; store only matches them.
type WorkKinds struct {
	VPS       string
	Substrate string
}

// Unqueued is a resource that breaks the invariant and the work item that would repair it.
type Unqueued struct {
	Kind       UnqueuedKind
	ResourceID string
	State      string
	// WorkKind and WorkID name the item to enqueue.
	WorkKind string
	WorkID   string
}

// noDueItem is the anti-join every query ends with: $1 is the work kind, the row's work id the
// named column.
func noDueItem(workID string) string {
	return `NOT EXISTS (SELECT 1 FROM work_items AS w
		WHERE w.kind = $1 AND w.resource_id = ` + workID + ` AND w.due_at IS NOT NULL)`
}

// The predicates of the resources that are not resting; migration 0072 indexes each one, so
// they must stay spelled as its index predicates are.
const (
	lbUnsettled      = `(state NOT IN ('ready', 'error', 'deleted') OR (state = 'ready' AND applied_version < spec_version))`
	certUnsettled    = `state NOT IN ('ready', 'error', 'deleted')`
	instUnsettled    = `state NOT IN ('running', 'error', 'deleted')`
	subnetUnsettled  = `state NOT IN ('ready', 'error', 'deleted')`
	clusterUnsettled = `state NOT IN ('ready', 'error', 'deleted')`
)

// unqueuedSQL is each kind's query: ids, states and work ids of the resources that break the
// invariant, at most $2 of them. $1 is the kind's work kind (WorkKinds).
var unqueuedSQL = map[UnqueuedKind]string{
	UnqueuedLoadBalancer: `SELECT id, state, id FROM load_balancers WHERE ` + lbUnsettled + `
		AND ` + noDueItem("load_balancers.id") + ` ORDER BY id LIMIT $2`,
	UnqueuedCertificate: `SELECT id, state, id FROM certificates WHERE ` + certUnsettled + `
		AND ` + noDueItem("certificates.id") + ` ORDER BY id LIMIT $2`,
	UnqueuedInstance: `SELECT id, state, id FROM instances WHERE ` + instUnsettled + `
		AND ` + noDueItem("instances.id") + ` ORDER BY id LIMIT $2`,
	UnqueuedSubnet: `SELECT id, state, id FROM subnets WHERE ` + subnetUnsettled + `
		AND ` + noDueItem("subnets.id") + ` ORDER BY id LIMIT $2`,
	UnqueuedCluster: `SELECT id, state, pool_id FROM substrates WHERE ` + clusterUnsettled + `
		AND ` + noDueItem("substrates.pool_id") + ` ORDER BY id LIMIT $2`,
	// A ready cluster with a node pool the provider does not report ready yet: its pass keeps
	// polling until every one is.
	UnqueuedNodePool: `SELECT id, state, pool_id FROM substrates WHERE state = 'ready'
		AND EXISTS (SELECT 1 FROM jsonb_array_elements(substrates.node_pools) AS np
			WHERE coalesce(np->>'ready', 'false') <> 'true')
		AND ` + noDueItem("substrates.pool_id") + ` ORDER BY id LIMIT $2`,
}

// workKind is the work kind resources of k are queued under.
func (k UnqueuedKind) workKind(wk WorkKinds) string {
	if k == UnqueuedCluster || k == UnqueuedNodePool {
		return wk.Substrate
	}
	return wk.VPS
}

// FindUnqueued returns up to limit resources of kind k that are not resting and have no due
// work item, with the item that would repair each.
func FindUnqueued(ctx context.Context, q Querier, wk WorkKinds, k UnqueuedKind, limit int) ([]Unqueued, error) {
	stmt, ok := unqueuedSQL[k]
	if !ok {
		return nil, fmt.Errorf("store: unqueued: unknown kind %q", k)
	}
	workKind := k.workKind(wk)
	out, err := collect(ctx, q, func(r pgx.Row) (Unqueued, error) {
		u := Unqueued{Kind: k, WorkKind: workKind}
		return u, r.Scan(&u.ResourceID, &u.State, &u.WorkID)
	}, stmt, workKind, limit)
	if err != nil {
		return nil, fmt.Errorf("store: unqueued %s: %w", k, err)
	}
	return out, nil
}

// FindAllUnqueued is FindUnqueued over every kind, up to limit of each.
func FindAllUnqueued(ctx context.Context, q Querier, wk WorkKinds, limit int) ([]Unqueued, error) {
	var all []Unqueued
	for _, k := range UnqueuedKinds {
		found, err := FindUnqueued(ctx, q, wk, k, limit)
		if err != nil {
			return nil, err
		}
		all = append(all, found...)
	}
	return all, nil
}

// EnqueueUnqueued queues the item of each resource in tx, due now.
func EnqueueUnqueued(ctx context.Context, tx Tx, found []Unqueued) error {
	for _, u := range found {
		if err := Enqueue(ctx, tx, u.WorkKind, u.WorkID, nil); err != nil {
			return err
		}
	}
	return nil
}

// countCap bounds what one kind's count reads: the metric only needs to tell none from some.
const countCap = 10_000

// CountUnqueued counts, per kind, the resources that break the invariant (at most countCap
// each); every kind is present, zero when none does.
func CountUnqueued(ctx context.Context, q Querier, wk WorkKinds) (map[UnqueuedKind]int64, error) {
	out := make(map[UnqueuedKind]int64, len(UnqueuedKinds))
	for _, k := range UnqueuedKinds {
		var n int64
		if err := q.QueryRow(ctx, `SELECT count(*) FROM (`+unqueuedSQL[k]+`) AS u`, k.workKind(wk), countCap).Scan(&n); err != nil {
			return nil, fmt.Errorf("store: count unqueued %s: %w", k, TranslateError(err))
		}
		out[k] = n
	}
	return out, nil
}
