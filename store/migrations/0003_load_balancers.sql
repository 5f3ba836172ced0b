-- Load balancers, what they target, idempotency records, the event outbox and metered usage.

CREATE TABLE load_balancers (
    id                   TEXT PRIMARY KEY,
    tenant_id            TEXT NOT NULL REFERENCES tenants (id),
    project_id           TEXT REFERENCES projects (id),
    pool_id              TEXT NOT NULL REFERENCES pools (id),
    account_id           TEXT NOT NULL REFERENCES provider_accounts (id),
    name                 TEXT NOT NULL,
    description          TEXT NOT NULL DEFAULT '',
    scope                TEXT NOT NULL CHECK (scope IN ('regional', 'global')),
    region               TEXT NOT NULL DEFAULT '',
    subnet_id            TEXT REFERENCES subnets (id),
    -- The tenant's settings as protojson of LoadBalancer (targets, forwarding, health check, ...).
    spec                 JSONB NOT NULL,
    -- spec_version grows with every accepted change; applied_version is what the provider has.
    spec_version         BIGINT NOT NULL DEFAULT 1,
    applied_version      BIGINT NOT NULL DEFAULT 0,
    state                TEXT NOT NULL CHECK (state IN ('pending', 'updating', 'ready', 'error', 'deleting', 'deleted')),
    address              TEXT NOT NULL DEFAULT '',
    address_v6           TEXT NOT NULL DEFAULT '',
    -- The provider's id once known, and the durable create-pending mark: set before the provider is
    -- asked to create, so a replica that dies mid-create leads its successor to adopt by name.
    provider_id          TEXT NOT NULL DEFAULT '',
    create_pending_at    TIMESTAMPTZ,
    -- What it reaches now, computed from the tenant's rows when the reconciler last wrote it.
    reached_instance_ids JSONB NOT NULL DEFAULT '[]',
    reached_machine_ids  JSONB NOT NULL DEFAULT '[]',
    last_error           TEXT NOT NULL DEFAULT '',
    created_at           TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at           TIMESTAMPTZ NOT NULL DEFAULT now(),
    ready_at             TIMESTAMPTZ,
    deleted_at           TIMESTAMPTZ
);
CREATE INDEX load_balancers_tenant ON load_balancers (tenant_id, id);
CREATE INDEX load_balancers_pool ON load_balancers (pool_id, region);

-- Which regional load balancers a global one targets (the inUse check on delete).
CREATE TABLE load_balancer_lb_targets (
    global_id   TEXT NOT NULL REFERENCES load_balancers (id),
    regional_id TEXT NOT NULL REFERENCES load_balancers (id),
    PRIMARY KEY (global_id, regional_id)
);
CREATE INDEX load_balancer_lb_targets_regional ON load_balancer_lb_targets (regional_id);

-- Which named instances a regional load balancer targets (deleting an instance updates them at once).
CREATE TABLE load_balancer_instance_targets (
    load_balancer_id TEXT NOT NULL REFERENCES load_balancers (id),
    instance_id      TEXT NOT NULL REFERENCES instances (id),
    PRIMARY KEY (load_balancer_id, instance_id)
);
CREATE INDEX load_balancer_instance_targets_instance ON load_balancer_instance_targets (instance_id);

-- Which certificates a load balancer names (the provider is asked once they are ready; a
-- certificate in use cannot be deleted).
CREATE TABLE load_balancer_certificates (
    load_balancer_id TEXT NOT NULL REFERENCES load_balancers (id),
    certificate_id   TEXT NOT NULL REFERENCES certificates (id),
    PRIMARY KEY (load_balancer_id, certificate_id)
);
CREATE INDEX load_balancer_certificates_certificate ON load_balancer_certificates (certificate_id);

-- Idempotency records: the same key with the same request replays; another request is refused.
CREATE TABLE idempotency_keys (
    tenant_id    TEXT NOT NULL,
    operation    TEXT NOT NULL,
    idem_key     TEXT NOT NULL,
    request_hash BYTEA NOT NULL,
    resource_id  TEXT NOT NULL,
    created_at   TIMESTAMPTZ NOT NULL DEFAULT now(),
    expires_at   TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (tenant_id, operation, idem_key)
);

-- The event outbox, written in the transaction of the change it describes. seq comes from
-- tenants.event_seq, so a reader that has seen seq N has seen every committed event before it.
CREATE TABLE events (
    tenant_id   TEXT NOT NULL,
    seq         BIGINT NOT NULL,
    id          TEXT NOT NULL UNIQUE,
    type        TEXT NOT NULL,
    resource_id TEXT NOT NULL,
    data        JSONB NOT NULL DEFAULT '{}',
    created_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, seq)
);
CREATE INDEX events_resource ON events (tenant_id, resource_id, seq);

-- Metered usage: an open interval per billed resource and meter.
CREATE TABLE usage_records (
    id          TEXT PRIMARY KEY,
    tenant_id   TEXT NOT NULL,
    meter       TEXT NOT NULL,
    resource_id TEXT NOT NULL,
    started_at  TIMESTAMPTZ NOT NULL,
    ended_at    TIMESTAMPTZ,
    UNIQUE (meter, resource_id)
);
CREATE INDEX usage_records_tenant ON usage_records (tenant_id, started_at);
