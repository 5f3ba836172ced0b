// The SDK from Node against a live `bc-server dev`: tenancy set-up with the admin token, a load
// balancer made, read and listed by a tenant principal, and the platform's errors as PlatformError,
// over every transport the SDK offers.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { createComputeClient, PlatformError } from "../dist/index.js";
import { createNodeComputeClient } from "../dist/node.js";
import { startServer } from "./helpers/server.mjs";
import { defaultRegion, httpRule, lbRequest, rejection, setupTenant } from "./helpers/fixture.mjs";

let server;
let a; // the tenant that owns the load balancer
let b; // another tenant, with a pool but no quota row
let lb; // a's load balancer, as create returned it

before(async () => {
  server = await startServer();
  a = await setupTenant(server, { label: "a" });
  b = await setupTenant(server, { label: "b", lbQuota: null });
  ({ loadBalancer: lb } = await a.client.loadBalancers.createLoadBalancer(lbRequest(a, { name: "web-main" })));
});

after(async () => {
  await server?.stop();
});

describe("load balancers as a tenant editor", () => {
  test("create returns the load balancer pending, with what was asked", () => {
    assert.match(lb.id, /^plb_[0-9a-hjkmnp-tv-z]{26,52}$/);
    assert.equal(lb.tenantId, a.tenantId);
    assert.equal(lb.poolId, a.poolId);
    assert.equal(lb.accountId, a.accountId);
    assert.equal(lb.name, "web-main");
    assert.equal(lb.scope, "regional");
    assert.equal(lb.region, defaultRegion);
    assert.equal(lb.targets?.pool, true);
    assert.deepEqual(lb.targets?.instanceIds, []);
    assert.equal(lb.forwarding.length, 1);
    assert.deepEqual(pickRule(lb.forwarding[0]), httpRule);
    assert.equal(lb.state, "pending");
    assert.ok(lb.createTime, "createTime is set");
  });

  test("get returns the same load balancer", async () => {
    const { loadBalancer: got } = await a.client.loadBalancers.getLoadBalancer({
      tenantId: a.tenantId,
      loadBalancerId: lb.id,
    });
    assert.equal(got.id, lb.id);
    assert.equal(got.name, lb.name);
    assert.equal(got.poolId, a.poolId);
    assert.equal(got.scope, "regional");
    assert.equal(got.targets?.pool, true);
    assert.deepEqual(got.forwarding.map(pickRule), [httpRule]);
    // The reconciler may already have moved it on; it is never gone.
    assert.ok(["pending", "updating", "ready", "error"].includes(got.state), `state ${got.state}`);
  });

  test("list includes it, once", async () => {
    const { loadBalancers } = await a.client.loadBalancers.listLoadBalancers({ tenantId: a.tenantId });
    const mine = loadBalancers.filter((x) => x.id === lb.id);
    assert.equal(mine.length, 1);
    assert.equal(mine[0].name, "web-main");
    assert.ok(loadBalancers.every((x) => x.tenantId === a.tenantId), "only the tenant's own");
  });

  test("the same idempotency key and request replays the first create", async () => {
    const req = lbRequest(a);
    const first = await a.client.loadBalancers.createLoadBalancer(req);
    const again = await a.client.loadBalancers.createLoadBalancer(req);
    assert.equal(again.loadBalancer?.id, first.loadBalancer?.id);
  });
});

describe("platform errors", () => {
  const cases = [
    {
      reason: "a name with capitals and an underscore is invalid input on field name",
      call: () => a.client.loadBalancers.createLoadBalancer(lbRequest(a, { name: "Bad_Name" })),
      code: "INVALID_INPUT",
      field: "name",
    },
    {
      reason: "a port out of range is invalid input on its camelCase field path",
      call: () =>
        a.client.loadBalancers.createLoadBalancer(lbRequest(a, { forwarding: [{ ...httpRule, entryPort: 0 }] })),
      code: "INVALID_INPUT",
      field: "forwarding[0].entryPort",
    },
    {
      reason: "another tenant reading the load balancer in its own tenant finds nothing",
      call: () => b.client.loadBalancers.getLoadBalancer({ tenantId: b.tenantId, loadBalancerId: lb.id }),
      code: "NOT_FOUND",
    },
    {
      reason: "another tenant naming the owner's tenant still finds nothing: objects hide, tenants do not",
      call: () => b.client.loadBalancers.getLoadBalancer({ tenantId: a.tenantId, loadBalancerId: lb.id }),
      code: "NOT_FOUND",
    },
    {
      reason: "another tenant listing the owner's tenant is refused",
      call: () => b.client.loadBalancers.listLoadBalancers({ tenantId: a.tenantId }),
      code: "ACCESS_DENIED",
    },
    {
      reason: "a tenant principal may not make tenants (a platform-admin call)",
      call: () => a.client.tenants.createTenant({ tenantId: `${a.tenantId}-x`, displayName: "x" }),
      code: "ACCESS_DENIED",
    },
    {
      reason: "a pool without a loadBalancers quota row grants none",
      call: () => b.client.loadBalancers.createLoadBalancer(lbRequest(b)),
      code: "QUOTA_EXCEEDED",
    },
    {
      reason: "a token the platform does not know is unauthenticated",
      call: () =>
        createComputeClient({ baseUrl: server.url, token: "not-a-token" }).loadBalancers.listLoadBalancers({
          tenantId: a.tenantId,
        }),
      code: "UNAUTHENTICATED",
    },
  ];
  for (const c of cases) {
    test(c.reason, async () => {
      const err = await rejection(c.call());
      assertPlatformError(err, c.code, c.field);
    });
  }
});

describe("state errors", () => {
  test("deleting a regional load balancer a global one targets is INVALID_STATE inUse", async () => {
    const { loadBalancer: global } = await a.client.loadBalancers.createLoadBalancer(
      lbRequest(a, { scope: "global", region: "", targets: { loadBalancerIds: [lb.id] } }),
    );
    assert.equal(global?.scope, "global");
    assert.deepEqual(global?.targets?.loadBalancerIds, [lb.id]);
    const err = await rejection(
      a.client.loadBalancers.deleteLoadBalancer({ tenantId: a.tenantId, loadBalancerId: lb.id }),
    );
    assertPlatformError(err, "INVALID_STATE");
    assert.equal(err.stateReason, "inUse");
  });
});

describe("every transport", () => {
  const transports = [
    { reason: "Connect JSON over fetch", make: (token) => createComputeClient({ baseUrl: server.url, token }) },
    {
      reason: "Connect binary over fetch",
      make: (token) => createComputeClient({ baseUrl: server.url, token, useBinaryFormat: true }),
    },
    {
      reason: "gRPC-Web over fetch",
      make: (token) => createComputeClient({ baseUrl: server.url, token, transport: "grpc-web" }),
    },
    {
      reason: "Connect over Node HTTP/1.1",
      make: (token) => createNodeComputeClient({ baseUrl: server.url, token, httpVersion: "1.1" }),
    },
    {
      reason: "gRPC over Node HTTP/2 (h2c)",
      make: (token) => createNodeComputeClient({ baseUrl: server.url, token, transport: "grpc" }),
    },
  ];
  for (const t of transports) {
    test(`${t.reason}: get succeeds and a bad input is a PlatformError`, async () => {
      const client = t.make(a.token);
      const { loadBalancer } = await client.loadBalancers.getLoadBalancer({
        tenantId: a.tenantId,
        loadBalancerId: lb.id,
      });
      assert.equal(loadBalancer?.id, lb.id);
      assert.equal(loadBalancer?.name, "web-main");
      const err = await rejection(client.loadBalancers.createLoadBalancer(lbRequest(a, { name: "Bad_Name" })));
      assertPlatformError(err, "INVALID_INPUT", "name");
    });
  }
});

/** pickRule keeps a forwarding rule's four wire fields, dropping protobuf-es's $typeName. */
function pickRule(r) {
  return { entryProtocol: r.entryProtocol, entryPort: r.entryPort, targetProtocol: r.targetProtocol, targetPort: r.targetPort };
}

function assertPlatformError(err, code, field) {
  assert.ok(err instanceof PlatformError, `expected a PlatformError, got ${err?.name}: ${err?.message}`);
  const codes = Array.isArray(code) ? code : [code];
  assert.ok(codes.includes(err.code), `code ${err.code}, want ${codes.join(" or ")} (${err.message})`);
  if (field !== undefined) assert.equal(err.field, field);
}
