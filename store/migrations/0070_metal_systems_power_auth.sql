-- A node names its system behind a BMC that manages several (blade chassis, multi-node servers):
-- two nodes may share a BMC endpoint with different systems, so the system is part of the
-- duplicate key. Empty is the BMC's only system.
ALTER TABLE metal_nodes ADD COLUMN bmc_system_id TEXT NOT NULL DEFAULT '';
-- How the reconciler last authenticated to the BMC: session, basic or rmcp+ (not a secret).
ALTER TABLE metal_nodes ADD COLUMN bmc_auth TEXT NOT NULL DEFAULT '';
-- When the BMC last reported power_state, and the state a power change asked for while the
-- reading did not show it (empty once it did).
ALTER TABLE metal_nodes ADD COLUMN power_read_at TIMESTAMPTZ;
ALTER TABLE metal_nodes ADD COLUMN power_requested TEXT NOT NULL DEFAULT '';

-- The engines drop an index differently (store.forEngine uncomments the line of the engine the
-- store runs on).
-- postgres: DROP INDEX metal_nodes_bmc_key;
-- cockroach: DROP INDEX metal_nodes@metal_nodes_bmc_key CASCADE;
CREATE UNIQUE INDEX metal_nodes_bmc_key ON metal_nodes (tenant_id, bmc_protocol, bmc_host_key, bmc_port, bmc_system_id);
