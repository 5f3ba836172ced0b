-- The periodic safety net compares, per provider account, what the last shared list showed of
-- each settled load balancer (provider_observations.digest) with what its last converged pass
-- saw there (observed_digest, the SHA-256 of the same encoding), and queues only the load
-- balancers whose two differ. NULL: no pass has recorded one yet (the load balancer is queued).
ALTER TABLE load_balancers ADD COLUMN IF NOT EXISTS observed_digest BYTEA;

-- The settled load balancers of one account, the rows the comparison reads.
CREATE INDEX IF NOT EXISTS load_balancers_settled_by_account ON load_balancers (account_id, id)
    WHERE state = 'ready';
