-- Retention (store/retention.go): each prune statement finds its oldest rows through one of
-- these indexes and deletes a bounded batch of them, so a pass costs what it deletes, not what
-- the table holds. The work-item and usage indexes are partial: they hold only the rows a prune
-- may ever take (idle items, closed intervals), so a busy queue or an open interval adds nothing.
CREATE INDEX IF NOT EXISTS events_created ON events (created_at);
CREATE INDEX IF NOT EXISTS event_inbox_created ON event_inbox (created_at);
CREATE INDEX IF NOT EXISTS idempotency_keys_created ON idempotency_keys (created_at);
CREATE INDEX IF NOT EXISTS usage_records_ended ON usage_records (ended_at) WHERE ended_at IS NOT NULL;
CREATE INDEX IF NOT EXISTS work_items_idle ON work_items (updated_at) WHERE due_at IS NULL AND lease_holder IS NULL;
