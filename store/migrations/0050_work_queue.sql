-- The reconcilers' work queue: one row per (kind, resource). See store/workqueue.go.
--
-- due_at            when the item should run next; NULL means idle (nothing to do until the next
--                   enqueue). Rows are kept idle rather than deleted so that epoch never restarts:
--                   a holder paused past its lease cannot find its old epoch on a fresh row.
-- lease_holder      the replica working on it, NULL when free.
-- lease_expires_at  after this another replica may claim it.
-- epoch             grows on every claim; every write of a holder is fenced on it.
-- generation        grows on every enqueue; a holder that finishes an older generation
--                   leaves the item due again.
-- attempts          consecutive failed attempts, reset by a success.
-- last_error        the last recorded failure, for showing on the resource.
CREATE TABLE work_items (
	kind text NOT NULL,
	resource_id text NOT NULL,
	due_at timestamptz,
	lease_holder text,
	lease_expires_at timestamptz,
	epoch int8 NOT NULL DEFAULT 0,
	generation int8 NOT NULL DEFAULT 1,
	attempts int8 NOT NULL DEFAULT 0,
	last_error text,
	created_at timestamptz NOT NULL DEFAULT now(),
	updated_at timestamptz NOT NULL DEFAULT now(),
	PRIMARY KEY (kind, resource_id)
);

-- Claims scan due rows in due order; idle rows (NULL) never match the range.
CREATE INDEX work_items_due_at_idx ON work_items (due_at);
