-- Tenants, principals and their tokens, projects, provider accounts, pools and quota rows.
-- Portable between CockroachDB and PostgreSQL: TEXT/BIGINT/BOOL/TIMESTAMPTZ/JSONB/BYTEA only.

CREATE TABLE tenants (
    id           TEXT PRIMARY KEY,
    display_name TEXT NOT NULL DEFAULT '',
    -- event_seq numbers the tenant's events: bumped in the transaction that writes one, so cursors
    -- follow commit order (a sequence or a timestamp would not).
    event_seq    BIGINT NOT NULL DEFAULT 0,
    created_at   TIMESTAMPTZ NOT NULL DEFAULT now()
);

CREATE TABLE principals (
    id             TEXT PRIMARY KEY,
    -- NULL for platform principals (the bootstrap admin).
    tenant_id      TEXT REFERENCES tenants (id),
    kind           TEXT NOT NULL CHECK (kind IN ('user', 'serviceAccount')),
    display_name   TEXT NOT NULL,
    platform_admin BOOL NOT NULL DEFAULT false,
    created_at     TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX principals_tenant ON principals (tenant_id, id);

CREATE TABLE tokens (
    id           TEXT PRIMARY KEY,
    principal_id TEXT NOT NULL REFERENCES principals (id),
    -- SHA-256 of the bearer secret; the secret itself is never stored.
    secret_hash  BYTEA NOT NULL UNIQUE,
    expires_at   TIMESTAMPTZ,
    revoked_at   TIMESTAMPTZ,
    created_at   TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX tokens_principal ON tokens (principal_id);

CREATE TABLE projects (
    id         TEXT PRIMARY KEY,
    tenant_id  TEXT NOT NULL REFERENCES tenants (id),
    name       TEXT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    UNIQUE (tenant_id, name)
);

CREATE TABLE provider_accounts (
    id           TEXT PRIMARY KEY,
    tenant_id    TEXT NOT NULL REFERENCES tenants (id),
    kind         TEXT NOT NULL,
    name         TEXT NOT NULL,
    -- The API token sealed with the configured key, bound to the row id.
    token_sealed BYTEA NOT NULL,
    api_url      TEXT NOT NULL DEFAULT '',
    created_at   TIMESTAMPTZ NOT NULL DEFAULT now(),
    UNIQUE (tenant_id, name)
);

CREATE TABLE pools (
    id         TEXT PRIMARY KEY,
    tenant_id  TEXT NOT NULL REFERENCES tenants (id),
    account_id TEXT NOT NULL REFERENCES provider_accounts (id),
    name       TEXT NOT NULL,
    regions    JSONB NOT NULL,
    policy     JSONB NOT NULL DEFAULT '{}',
    state      TEXT NOT NULL DEFAULT 'active' CHECK (state IN ('active', 'archived')),
    created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    UNIQUE (tenant_id, name)
);

-- One row per pool, tenant and resource. No row grants none. Booking is
-- UPDATE ... SET used = used + 1 WHERE used < quota_limit, so concurrent bookings never overbook.
CREATE TABLE quotas (
    pool_id     TEXT NOT NULL REFERENCES pools (id),
    tenant_id   TEXT NOT NULL REFERENCES tenants (id),
    resource    TEXT NOT NULL,
    quota_limit BIGINT NOT NULL CHECK (quota_limit >= 0),
    used        BIGINT NOT NULL DEFAULT 0 CHECK (used >= 0),
    PRIMARY KEY (pool_id, tenant_id, resource)
);
