-- Bare-metal nodes enrolled by their BMC, and where they are in the provision state machine
-- (see metal/table.go). Portable between CockroachDB and PostgreSQL.

CREATE TABLE metal_nodes (
    id                TEXT PRIMARY KEY,
    tenant_id         TEXT NOT NULL REFERENCES tenants (id),
    name              TEXT NOT NULL,
    -- The provision state; the allowed moves live in metal/table.go, not here, so the column
    -- only refuses what is not a state name at all.
    state             TEXT NOT NULL CHECK (state IN (
                          'enrolled', 'inspecting', 'inspected', 'inspect-failed', 'commissioning', 'ready',
                          'commission-failed', 'deploying', 'deployed', 'deploy-failed', 'rescuing', 'rescue',
                          'rescue-failed', 'unrescuing', 'unrescue-failed', 'releasing', 'release-failed',
                          'retired')),
    -- When the node entered its state: a transient state fails once its deadline has passed.
    state_entered_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
    -- Grows with every recorded move (verb or reconciler outcome). A reconciler writes its
    -- outcome only WHERE version is the one it read, so an abort or another verb that landed
    -- while the workflow ran is never overwritten.
    version           BIGINT NOT NULL DEFAULT 1,
    -- Work the reconciler owes a resting node: 'probe' (check the BMC after enrollment or a
    -- credential change), 'retire' (best-effort power off), or '' (none). Transient states
    -- need no mark: their workflow follows from the state.
    pending_work      TEXT NOT NULL DEFAULT '' CHECK (pending_work IN ('', 'probe', 'retire')),
    bmc_address       TEXT NOT NULL,
    -- The effective port (the protocol's default filled in at enrollment).
    bmc_port          BIGINT NOT NULL CHECK (bmc_port BETWEEN 1 AND 65535),
    bmc_protocol      TEXT NOT NULL CHECK (bmc_protocol IN ('redfish', 'ipmi')),
    bmc_username      TEXT NOT NULL,
    -- The BMC password sealed with the configured key and bound to the row id (seal.Keyring);
    -- never returned, never logged.
    bmc_password_sealed BYTEA NOT NULL,
    bmc_insecure_tls  BOOL NOT NULL DEFAULT false,
    bmc_ca_cert_pem   TEXT NOT NULL DEFAULT '',
    bmc_legacy_boot   BOOL NOT NULL DEFAULT false,
    -- What the last deploy asked for.
    image             TEXT NOT NULL DEFAULT '',
    -- The last BMC failure (scrubbed), why the node is in a failure state, and the BMC's last
    -- answer (scrubbed): what an operator looks at.
    last_error        TEXT NOT NULL DEFAULT '',
    failure_reason    TEXT NOT NULL DEFAULT '',
    last_answer       TEXT NOT NULL DEFAULT '',
    power_state       TEXT NOT NULL DEFAULT '',
    -- The hardware summary of the last inspection or commissioning (bmc.Inventory as JSON).
    inventory         JSONB,
    created_at        TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at        TIMESTAMPTZ NOT NULL DEFAULT now(),
    CONSTRAINT metal_nodes_name_key UNIQUE (tenant_id, name),
    -- One node per BMC within a tenant: two nodes driving one machine would fight over it.
    CONSTRAINT metal_nodes_bmc_key UNIQUE (tenant_id, bmc_address, bmc_port)
);
CREATE INDEX metal_nodes_tenant ON metal_nodes (tenant_id, id);
