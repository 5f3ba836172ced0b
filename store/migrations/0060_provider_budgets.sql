-- Request budgets shared by every replica that calls a provider with one API token (DigitalOcean
-- allows 250 requests a minute per token, whichever process sends them). One row per token,
-- keyed by the SHA-256 of the token (never the token itself): a token bucket refilled from the
-- database clock and drawn with one conditional UPDATE, so replicas lease tokens in batches
-- without locks held across statements.
--
-- tokens         what was left at refilled_at (fractional: the bucket refills continuously).
-- refilled_at    when tokens was computed; it never moves back.
-- granted        the size of the last lease, returned by the statement that took it.
-- blocked_until  the provider said the budget is spent until then (a 429 or remaining 0).
CREATE TABLE provider_budgets (
	key text PRIMARY KEY,
	tokens float8 NOT NULL,
	refilled_at timestamptz NOT NULL DEFAULT now(),
	granted int8 NOT NULL DEFAULT 0,
	blocked_until timestamptz NOT NULL DEFAULT now()
);
