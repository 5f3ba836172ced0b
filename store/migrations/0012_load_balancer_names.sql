-- A load balancer's name is unique per tenant among its load balancers not deleted (a deleting
-- one still holds it). Live duplicates made before the rule keep their first holder's name; each
-- later one gets a suffix from its own id, so the index below can be built.
UPDATE load_balancers SET name = left(name, 35) || '-' || right(id, 6), updated_at = now()
 WHERE id IN (
   SELECT id FROM (
     SELECT id, row_number() OVER (PARTITION BY tenant_id, name ORDER BY created_at, id) AS n
       FROM load_balancers WHERE state <> 'deleted'
   ) AS ranked WHERE n > 1
 );
CREATE UNIQUE INDEX load_balancers_live_name ON load_balancers (tenant_id, name) WHERE state <> 'deleted';

-- Lists read a tenant's load balancers in creation order, page after page from a (created_at, id) key.
CREATE INDEX load_balancers_tenant_created ON load_balancers (tenant_id, created_at, id);
