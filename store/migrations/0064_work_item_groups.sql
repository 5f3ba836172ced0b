-- Fair claims. A work item names its fairness group (the tenant, for metal nodes): a runner may
-- hold at most a bounded number of one kind's items of one group at once, so one tenant's hung
-- BMCs never take every slot its kind has (store.ClaimParams.GroupLimits). '' is the group of
-- work that names none.
ALTER TABLE work_items ADD COLUMN fair_group TEXT NOT NULL DEFAULT '';

UPDATE work_items SET fair_group = m.tenant_id
  FROM metal_nodes m
 WHERE work_items.kind = 'metal.nodes' AND work_items.resource_id = m.id;
