package store

import (
	"context"
	"fmt"
	"time"
)

// The periodic safety net over settled load balancers (ready, with their latest spec applied).
// Requests and the writes that change what a load balancer reaches queue it in their own
// transaction (an instance gaining its machine, an instance deleted, a certificate turning
// ready), so the net only looks for what no transaction recorded: a change made at the provider
// by someone else, and a trigger that was lost. Its cost per provider account and interval is
// one shared list (provider_lists) and the query below, not a pass per load balancer.

// AccountsWithSettledLoadBalancers returns the provider accounts that hold a ready load balancer.
func AccountsWithSettledLoadBalancers(ctx context.Context, q Querier) ([]string, error) {
	out, err := collect(ctx, q, scanString, `SELECT DISTINCT account_id FROM load_balancers WHERE state = 'ready' ORDER BY 1`)
	if err != nil {
		return nil, fmt.Errorf("store: accounts with settled load balancers: %w", err)
	}
	return out, nil
}

// sqlLoadBalancersOutOfStep compares, for the settled load balancers of one account ($1):
//
//   - what the last recorded list of kind $2 showed of each (provider_observations.digest) with
//     what its last converged pass saw (observed_digest), when that list began after the row
//     was last written and less than $3 seconds ago: a different digest, or none on either
//     side (missing at the provider, never recorded), is out of step;
//   - for a regional one, the machines it reached when last applied (reached_machine_ids) with
//     the machines of the instances it reaches now (its pool's, when it targets the pool, and
//     the ones it names; the tenant's own, with a machine, not being deleted; the rule of
//     vps.regionalTargets), as sets.
const sqlLoadBalancersOutOfStep = `
SELECT lb.id FROM load_balancers AS lb
LEFT JOIN provider_lists AS l ON l.account_id = lb.account_id AND l.kind = $2
LEFT JOIN provider_observations AS o ON o.account_id = lb.account_id AND o.kind = $2 AND o.provider_id = lb.provider_id
CROSS JOIN LATERAL (
	SELECT coalesce(jsonb_agg(DISTINCT i.machine_id), '[]'::jsonb) AS machines FROM instances AS i
	WHERE lb.scope = 'regional' AND i.tenant_id = lb.tenant_id AND i.machine_id <> ''
		AND i.state NOT IN ('deleting', 'deleted')
		AND ((lb.spec->'targets'->>'pool' = 'true' AND i.pool_id = lb.pool_id AND i.region = lb.region
				AND coalesce(i.subnet_id, '') = coalesce(lb.subnet_id, ''))
			OR EXISTS (SELECT 1 FROM load_balancer_instance_targets AS t
				WHERE t.load_balancer_id = lb.id AND t.instance_id = i.id))
) AS want
WHERE lb.account_id = $1 AND lb.state = 'ready' AND lb.applied_version >= lb.spec_version
	AND (
		(l.began_at > lb.updated_at AND l.began_at > now() - $3::float8 * interval '1 second'
			AND (o.digest IS NULL OR lb.observed_digest IS NULL OR o.digest <> lb.observed_digest))
		OR (lb.scope = 'regional'
			AND NOT (lb.reached_machine_ids @> want.machines AND want.machines @> lb.reached_machine_ids))
	)
ORDER BY lb.id`

// LoadBalancersOutOfStep returns the account's settled load balancers that differ from what the
// last recorded list of kind showed (when that list is younger than listAge) or whose reach
// differs from what was last applied (sqlLoadBalancersOutOfStep), in id order: the ones the
// periodic pass queues. It is one statement, whatever the number of load balancers.
func LoadBalancersOutOfStep(ctx context.Context, q Querier, accountID, kind string, listAge time.Duration) ([]string, error) {
	out, err := collect(ctx, q, scanString, sqlLoadBalancersOutOfStep, accountID, kind, listAge.Seconds())
	if err != nil {
		return nil, fmt.Errorf("store: load balancers out of step: %w", err)
	}
	return out, nil
}
