-- Tenant networks and subnets (one VPC each), certificates and instances.

CREATE TABLE networks (
    id         TEXT PRIMARY KEY,
    tenant_id  TEXT NOT NULL REFERENCES tenants (id),
    account_id TEXT NOT NULL REFERENCES provider_accounts (id),
    name       TEXT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    UNIQUE (tenant_id, name)
);

CREATE TABLE subnets (
    id          TEXT PRIMARY KEY,
    tenant_id   TEXT NOT NULL REFERENCES tenants (id),
    network_id  TEXT NOT NULL REFERENCES networks (id),
    account_id  TEXT NOT NULL REFERENCES provider_accounts (id),
    name        TEXT NOT NULL,
    region      TEXT NOT NULL,
    ip_range    TEXT NOT NULL,
    state       TEXT NOT NULL DEFAULT 'pending',
    provider_id TEXT NOT NULL DEFAULT '',
    last_error  TEXT NOT NULL DEFAULT '',
    created_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
    deleted_at  TIMESTAMPTZ
);
CREATE INDEX subnets_tenant ON subnets (tenant_id, id);

CREATE TABLE certificates (
    id                 TEXT PRIMARY KEY,
    tenant_id          TEXT NOT NULL REFERENCES tenants (id),
    account_id         TEXT NOT NULL REFERENCES provider_accounts (id),
    name               TEXT NOT NULL,
    kind               TEXT NOT NULL CHECK (kind IN ('custom', 'managed')),
    dns_names          JSONB NOT NULL DEFAULT '[]',
    -- Custom certificates: the private key sealed and bound to the row id; never returned.
    private_key_sealed BYTEA,
    leaf_certificate   TEXT NOT NULL DEFAULT '',
    certificate_chain  TEXT NOT NULL DEFAULT '',
    state              TEXT NOT NULL DEFAULT 'pending',
    provider_id        TEXT NOT NULL DEFAULT '',
    last_error         TEXT NOT NULL DEFAULT '',
    created_at         TIMESTAMPTZ NOT NULL DEFAULT now(),
    deleted_at         TIMESTAMPTZ
);
CREATE INDEX certificates_tenant ON certificates (tenant_id, id);

CREATE TABLE instances (
    id          TEXT PRIMARY KEY,
    tenant_id   TEXT NOT NULL REFERENCES tenants (id),
    project_id  TEXT REFERENCES projects (id),
    pool_id     TEXT NOT NULL REFERENCES pools (id),
    account_id  TEXT NOT NULL REFERENCES provider_accounts (id),
    name        TEXT NOT NULL,
    region      TEXT NOT NULL,
    subnet_id   TEXT REFERENCES subnets (id),
    flavor      TEXT NOT NULL,
    -- The provider's machine id once it made one; the instance counts for load balancers from
    -- then until state becomes deleting.
    machine_id  TEXT NOT NULL DEFAULT '',
    state       TEXT NOT NULL DEFAULT 'pending',
    last_error  TEXT NOT NULL DEFAULT '',
    created_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
    deleted_at  TIMESTAMPTZ
);
CREATE INDEX instances_tenant ON instances (tenant_id, id);
CREATE INDEX instances_pool_region ON instances (tenant_id, pool_id, region);
