-- A claim of a kind with a group bound (metal) counts the items this holder holds unexpired per
-- group: without an index on the holder that count read every work item on every claim
-- (test/explain). Only held items are indexed, so the index stays the size of the work in flight.
CREATE INDEX IF NOT EXISTS work_items_holder ON work_items (lease_holder, kind, fair_group) WHERE lease_holder IS NOT NULL;
