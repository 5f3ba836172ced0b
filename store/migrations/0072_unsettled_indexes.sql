-- The work-queue invariant (store/unqueued.go): every provider-side resource that is not resting
-- has a due work item. Its queries run at every metrics scrape and every periodic pass, so each
-- reads only the rows that are not resting, through these partial indexes (both engines take
-- them), instead of every resource ever made. The predicates are spelled as the queries' are.
CREATE INDEX IF NOT EXISTS load_balancers_unsettled ON load_balancers (id)
    WHERE (state NOT IN ('ready', 'error', 'deleted') OR (state = 'ready' AND applied_version < spec_version));
CREATE INDEX IF NOT EXISTS certificates_unsettled ON certificates (id) WHERE state NOT IN ('ready', 'error', 'deleted');
CREATE INDEX IF NOT EXISTS instances_unsettled ON instances (id) WHERE state NOT IN ('running', 'error', 'deleted');
CREATE INDEX IF NOT EXISTS subnets_unsettled ON subnets (id) WHERE state NOT IN ('ready', 'error', 'deleted');
CREATE INDEX IF NOT EXISTS substrates_unsettled ON substrates (id) WHERE state <> 'deleted' AND state <> 'error';
