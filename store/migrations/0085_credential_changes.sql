-- One row whose version every statement that takes a credential back (a token revoked) raises in
-- its own transaction. Replicas cache authenticated tokens until this version moves: one read of
-- it per replica and interval replaces a read per token and call (core/principals.go). A plain row,
-- not LISTEN/NOTIFY, so both engines serve it.
CREATE TABLE IF NOT EXISTS credential_changes (
    id      INT8 PRIMARY KEY CHECK (id = 1),
    version INT8 NOT NULL DEFAULT 0
);
INSERT INTO credential_changes (id, version) VALUES (1, 0) ON CONFLICT (id) DO NOTHING;
