-- Duplicate BMCs are found by the host's normalised form, not its spelling: "localhost",
-- "LOCALHOST", "127.0.0.1", "[::1]" and "bmc.example." name one host (netguard.HostKey: the
-- least address the name resolved to at enrollment, else the lower-cased name without brackets
-- or trailing dot), and a Redfish (TCP) and an IPMI (UDP) endpoint on one port are two
-- endpoints, so the protocol is part of the key.
ALTER TABLE metal_nodes ADD COLUMN bmc_host_key TEXT NOT NULL DEFAULT '';

-- Rows enrolled before: the spelling normalised without resolving (the loopback names as
-- HostKey has them).
UPDATE metal_nodes SET bmc_host_key = CASE
    WHEN lower(rtrim(btrim(bmc_address, '[]'), '.')) IN ('localhost', '::1', '0:0:0:0:0:0:0:1') THEN '127.0.0.1'
    ELSE lower(rtrim(btrim(bmc_address, '[]'), '.')) END;

-- Nodes that are duplicates under the new key keep their first holder's key; each later one
-- gets its own id appended, so the index below can be built (an operator retires them).
UPDATE metal_nodes SET bmc_host_key = bmc_host_key || '#' || id
 WHERE id IN (
   SELECT id FROM (
     SELECT id, row_number() OVER (PARTITION BY tenant_id, bmc_protocol, bmc_host_key, bmc_port ORDER BY created_at, id) AS n
       FROM metal_nodes
   ) AS ranked WHERE n > 1
 );

-- The engines drop a UNIQUE constraint differently (store.forEngine uncomments the line of the
-- engine the store runs on).
-- postgres: ALTER TABLE metal_nodes DROP CONSTRAINT metal_nodes_bmc_key;
-- cockroach: DROP INDEX metal_nodes@metal_nodes_bmc_key CASCADE;
CREATE UNIQUE INDEX metal_nodes_bmc_key ON metal_nodes (tenant_id, bmc_protocol, bmc_host_key, bmc_port);
