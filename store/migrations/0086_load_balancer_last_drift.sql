-- When the reconciler last found the provider's copy of a load balancer changed by someone else
-- (not by a change of ours it had yet to apply) and put it back, publishing
-- providerLoadBalancer.drifted in the same transaction. NULL: never. Nullable with no default,
-- so adding it rewrites no row on either engine.
ALTER TABLE load_balancers ADD COLUMN IF NOT EXISTS last_drift_at TIMESTAMPTZ;
