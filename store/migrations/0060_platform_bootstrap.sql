-- The principal `bc-server bootstrap-admin` made. The fixed key makes concurrent bootstraps (two
-- hosts at once) agree on one admin without locks: the later insert conflicts and does nothing.
CREATE TABLE platform_bootstrap (
    id           INT PRIMARY KEY CHECK (id = 1),
    principal_id TEXT NOT NULL REFERENCES principals (id),
    created_at   TIMESTAMPTZ NOT NULL DEFAULT now()
);
