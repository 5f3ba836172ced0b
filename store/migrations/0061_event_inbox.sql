-- Events leave the writers' hot path. A change writes its event into event_inbox (no shared row:
-- two creates of one tenant no longer both bump tenants.event_seq), and a reader numbers what
-- has committed before it reads (store.SequenceEvents): the numbering statement takes the
-- tenant's row in event_counters, so numbering transactions of one tenant commit one after the
-- other and seq order is commit order of the numbering. A change that commits late is simply
-- numbered by a later reader, after every seq already handed out, so no cursor ever skips it.
CREATE TABLE event_inbox (
    tenant_id   TEXT NOT NULL,
    id          TEXT NOT NULL,
    type        TEXT NOT NULL,
    resource_id TEXT NOT NULL,
    data        JSONB NOT NULL DEFAULT '{}',
    created_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, id)
);

-- The last seq handed out per tenant (was tenants.event_seq, which stays for older replicas'
-- sake but is no longer written; see the README on rolling upgrades across this step).
CREATE TABLE event_counters (
    tenant_id TEXT PRIMARY KEY,
    seq       BIGINT NOT NULL
);
INSERT INTO event_counters (tenant_id, seq) SELECT id, event_seq FROM tenants WHERE event_seq > 0;
