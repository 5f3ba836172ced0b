-- Status polling shared by every replica. A reconciler that must know the state of many
-- resources of one provider account lists them (DigitalOcean: one request per page of 200)
-- instead of getting each; these tables let one replica list for all of them.
--
-- provider_lists: one row per account and listed kind.
--   began_at    when the last recorded list began (database clock): it speaks for every row
--               last written before then.
--   claimed_at  when a replica last claimed the right to list (the began_at it will record).
--   next_at     before then nobody claims again: a list in flight holds it for its timeout, a
--               recorded one for the poll interval.
-- provider_observations: what the last recorded list showed, one row per provider resource
--   (a provider resource absent from that list has no row). body is the reconciler's encoding
--   of the observation; it carries no secret. digest is its SHA-256, so a list rewrites only
--   the rows that changed.
CREATE TABLE provider_lists (
	account_id text NOT NULL REFERENCES provider_accounts (id) ON DELETE CASCADE,
	kind text NOT NULL,
	began_at timestamptz NOT NULL DEFAULT '1970-01-01 00:00:00+00',
	claimed_at timestamptz NOT NULL DEFAULT '1970-01-01 00:00:00+00',
	next_at timestamptz NOT NULL DEFAULT '1970-01-01 00:00:00+00',
	PRIMARY KEY (account_id, kind)
);

CREATE TABLE provider_observations (
	account_id text NOT NULL,
	kind text NOT NULL,
	provider_id text NOT NULL,
	body bytea NOT NULL,
	digest bytea NOT NULL,
	PRIMARY KEY (account_id, kind, provider_id),
	FOREIGN KEY (account_id, kind) REFERENCES provider_lists (account_id, kind) ON DELETE CASCADE
);
