// Test fixtures made through the SDK itself: a tenant with a principal, its token, an editor grant,
// a provider account, a pool and (unless lbQuota is null) a loadBalancers quota on it.
import { randomBytes } from "node:crypto";
import { createComputeClient } from "../../dist/index.js";

/** uniqueId returns a tenant-id-safe name that no earlier run used (the dev database may persist). */
export function uniqueId(label) {
  return `sdk-${label}-${Date.now().toString(36)}-${randomBytes(3).toString("hex")}`;
}

/** adminClient returns a client authenticated with the dev server's platform-admin token. */
export function adminClient(server, options = {}) {
  return createComputeClient({ baseUrl: server.url, token: server.adminToken, ...options });
}

/** defaultRegion is the region fixtures' pools offer (a DigitalOcean slug). */
export const defaultRegion = "nyc3";

/**
 * setupTenant makes a tenant and everything a tenant principal needs to create load balancers.
 * Platform-admin calls (tenant, principal, token, grant, account, pool, quota) use the admin token.
 * Returns { tenantId, principalId, token, accountId, poolId, client } where client is the
 * principal's own.
 */
export async function setupTenant(server, { label = "t", role = "editor", lbQuota = 5 } = {}) {
  const admin = adminClient(server);
  const tenantId = uniqueId(label);
  await admin.tenants.createTenant({ tenantId, displayName: `SDK test ${label}` });
  const { principal } = await admin.tenants.createPrincipal({
    tenantId,
    kind: "serviceAccount",
    displayName: `sdk ${label}`,
  });
  const issued = await admin.tenants.createToken({ tenantId, principalId: principal.id, ttlSeconds: 3600n });
  await admin.tenants.grantRole({ tenantId, principalId: principal.id, role });
  const { account } = await admin.providerAccounts.createProviderAccount({
    tenantId,
    kind: "digitalocean",
    name: "main",
    // Dev mode serves the provider simulator; a fake token is all it needs. Never a real token.
    token: "sdk-test-not-a-real-token",
    ...(process.env.BC_TEST_PROVIDER_API_URL ? { apiUrl: process.env.BC_TEST_PROVIDER_API_URL } : {}),
  });
  const { pool } = await admin.pools.createPool({
    tenantId,
    accountId: account.id,
    name: "main",
    regions: [defaultRegion],
  });
  if (lbQuota !== null) {
    await admin.pools.setQuota({ tenantId, poolId: pool.id, resource: "loadBalancers", limit: BigInt(lbQuota) });
  }
  return {
    tenantId,
    principalId: principal.id,
    token: issued.secret,
    accountId: account.id,
    poolId: pool.id,
    client: createComputeClient({ baseUrl: server.url, token: issued.secret }),
  };
}

/** httpRule is one plain http forwarding rule (80 -> 8080). */
export const httpRule = { entryProtocol: "http", entryPort: 80, targetProtocol: "http", targetPort: 8080 };

/** lbRequest returns a valid regional create request targeting the pool, with overrides applied. */
export function lbRequest(fx, overrides = {}) {
  return {
    tenantId: fx.tenantId,
    poolId: fx.poolId,
    name: `web-${randomBytes(3).toString("hex")}`,
    scope: "regional",
    region: defaultRegion,
    targets: { pool: true },
    forwarding: [httpRule],
    idempotencyKey: `k-${randomBytes(8).toString("hex")}`,
    ...overrides,
  };
}

/**
 * rejection awaits a promise that must fail and returns its error (assert.rejects returns nothing).
 */
export async function rejection(promise) {
  try {
    await promise;
  } catch (err) {
    return err;
  }
  throw new Error("the call succeeded but was expected to fail");
}
