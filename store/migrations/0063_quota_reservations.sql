-- A quota unit booked ahead of the transaction that uses it (store/reservations.go): creates of
-- one tenant share its quota row, and booking it inside their SERIALIZABLE transactions made them
-- abort one another. A reservation is booked in its own one-statement transaction, consumed
-- (deleted) by the transaction that creates the resource, refunded when that transaction does
-- not commit, and refunded by the sweeper when its replica died in between.
CREATE TABLE quota_reservations (
    id         TEXT PRIMARY KEY,
    pool_id    TEXT NOT NULL,
    tenant_id  TEXT NOT NULL,
    resource   TEXT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL DEFAULT now()
);

CREATE INDEX quota_reservations_created ON quota_reservations (created_at);
CREATE INDEX quota_reservations_quota ON quota_reservations (pool_id, tenant_id, resource);
