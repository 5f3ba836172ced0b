-- Kubernetes substrates behind pools, and the cluster nodes that joined them.
-- Portable between CockroachDB and PostgreSQL: TEXT/BIGINT/BOOL/TIMESTAMPTZ/JSONB/BYTEA only.

-- One row per pool that ever had a substrate in its policy. core writes the row (pending) in the
-- transaction that changes the pool's policy; the kubernetes.substrates reconciler writes the
-- rest: what it acted on (account, mode, cluster), what it made there and what it found.
CREATE TABLE substrates (
    id                TEXT PRIMARY KEY,
    tenant_id         TEXT NOT NULL REFERENCES tenants (id),
    pool_id           TEXT NOT NULL UNIQUE REFERENCES pools (id),
    state             TEXT NOT NULL DEFAULT 'pending'
                      CHECK (state IN ('pending', 'provisioning', 'ready', 'error', 'deleting', 'deleted')),
    -- The account and mode ('create' or 'adopt') the reconciler acted on: a policy naming another
    -- account or cluster makes it tear down what it made here first.
    account_id        TEXT NOT NULL DEFAULT '',
    mode              TEXT NOT NULL DEFAULT '' CHECK (mode IN ('', 'create', 'adopt')),
    cluster_id        TEXT NOT NULL DEFAULT '',
    -- Whether the reconciler made the cluster (and so may delete it); an adopted one is never deleted.
    cluster_created   BOOL NOT NULL DEFAULT false,
    -- The durable create-pending mark: set before the provider is asked to make the cluster, so a
    -- replica that died mid-create leads its successor to adopt it by its deterministic name.
    create_pending_at TIMESTAMPTZ,
    -- What the reconciler keeps in the cluster: node pools, applied objects, and objects of the
    -- same name it did not create (reported, never taken over). JSON arrays.
    node_pools        JSONB NOT NULL DEFAULT '[]',
    objects           JSONB NOT NULL DEFAULT '[]',
    conflicts         JSONB NOT NULL DEFAULT '[]',
    -- The hosted join token: its SHA-256 (compared in constant time when bcd joins a node) and the
    -- token sealed with the configured key, bound to the row id, for the reconciler to put into
    -- the cluster's Secret. Never returned, never logged.
    join_token_hash   BYTEA NOT NULL,
    join_token_sealed BYTEA NOT NULL,
    last_error        TEXT NOT NULL DEFAULT '',
    created_at        TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at        TIMESTAMPTZ NOT NULL DEFAULT now(),
    deleted_at        TIMESTAMPTZ
);
CREATE INDEX substrates_tenant ON substrates (tenant_id, pool_id);

-- The cluster nodes that joined a substrate's pool (bcd presented the join token): the pool's
-- machines on that substrate. The reconciler removes rows of nodes its node pools no longer have.
CREATE TABLE substrate_nodes (
    id               TEXT PRIMARY KEY,
    substrate_id     TEXT NOT NULL REFERENCES substrates (id),
    tenant_id        TEXT NOT NULL REFERENCES tenants (id),
    pool_id          TEXT NOT NULL REFERENCES pools (id),
    name             TEXT NOT NULL,
    provider_node_id TEXT NOT NULL,
    node_pool        TEXT NOT NULL,
    joined_at        TIMESTAMPTZ NOT NULL DEFAULT now(),
    last_seen_at     TIMESTAMPTZ NOT NULL DEFAULT now(),
    CONSTRAINT substrate_nodes_name_key UNIQUE (substrate_id, name)
);
CREATE INDEX substrate_nodes_pool ON substrate_nodes (pool_id, id);
