// maskedUpdate and pages() against a live `bc-server dev`: a masked update clears the parts it
// names, and the async iterable walks every page of a list.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { maskedUpdate, modifyLoadBalancer } from "../dist/update.js";
import { pages } from "../dist/pages.js";
import { isPlatformError } from "../dist/errors.js";
import { LoadBalancerTlsCipherPolicy } from "../dist/index.js";
import { startServer } from "./helpers/server.mjs";
import { lbRequest, setupTenant } from "./helpers/fixture.mjs";

let server;
let a;

before(async () => {
  server = await startServer();
  a = await setupTenant(server, { label: "pages", lbQuota: 10 });
});

after(async () => {
  await server?.stop();
});

test("maskedUpdate removes the health check it names and keeps what it does not", async () => {
  const { loadBalancer: lb } = await a.client.loadBalancers.createLoadBalancer(
    lbRequest(a, { healthCheck: { protocol: "tcp", port: 8080 }, stickySessions: { cookieName: "lb", ttlSeconds: 60 } }),
  );
  const req = maskedUpdate({ tenantId: a.tenantId, loadBalancerId: lb.id, redirectHttpToHttps: true }, "healthCheck");
  assert.deepEqual(req.updateMask?.paths, ["health_check", "redirect_http_to_https"]);
  const { loadBalancer: up } = await a.client.loadBalancers.updateLoadBalancer(req);
  assert.equal(up.healthCheck, undefined);
  assert.equal(up.stickySessions?.cookieName, "lb");
  assert.equal(up.redirectHttpToHttps, true);
});

test("the provider settings: created, named by maskedUpdate, cleared to the default, create-only ones refused", async () => {
  const { loadBalancer: lb } = await a.client.loadBalancers.createLoadBalancer(
    lbRequest(a, { sizeUnit: 2, httpIdleTimeoutSeconds: 90, tlsCipherPolicy: LoadBalancerTlsCipherPolicy.STRONG, labels: { team: "web" } }),
  );
  assert.equal(lb.sizeUnit, 2);
  assert.equal(lb.tlsCipherPolicy, LoadBalancerTlsCipherPolicy.STRONG);
  assert.deepEqual(lb.labels, { team: "web" });
  const req = maskedUpdate({ tenantId: a.tenantId, loadBalancerId: lb.id, sizeUnit: 3 }, "httpIdleTimeoutSeconds");
  assert.deepEqual(req.updateMask?.paths, ["size_unit", "http_idle_timeout_seconds"]);
  const { loadBalancer: up } = await a.client.loadBalancers.updateLoadBalancer(req);
  assert.equal(up.sizeUnit, 3);
  assert.equal(up.httpIdleTimeoutSeconds, undefined);
  assert.equal(up.tlsCipherPolicy, LoadBalancerTlsCipherPolicy.STRONG);
  await assert.rejects(
    a.client.loadBalancers.updateLoadBalancer(maskedUpdate({ tenantId: a.tenantId, loadBalancerId: lb.id, labels: { team: "api" } })),
    (err) => isPlatformError(err, "INVALID_INPUT") && err.field === "labels",
  );
});

test("pages yields every load balancer once, in creation order", async () => {
  const made = [];
  for (let i = 0; i < 5; i++) {
    const { loadBalancer } = await a.client.loadBalancers.createLoadBalancer(lbRequest(a));
    made.push(loadBalancer.id);
  }
  const { loadBalancers: all } = await a.client.loadBalancers.listLoadBalancers({ tenantId: a.tenantId });
  const seen = [];
  for await (const lb of pages(a.client.loadBalancers.listLoadBalancers, { tenantId: a.tenantId, pageSize: 2 }, (r) => r.loadBalancers)) {
    seen.push(lb.id);
  }
  assert.deepEqual(seen, all.map((lb) => lb.id));
  assert.ok(made.every((id) => seen.includes(id)));
});

test("pages walks the other lists too: projects one at a time", async () => {
  for (let i = 0; i < 3; i++) {
    await a.client.projects.createProject({ tenantId: a.tenantId, name: `paged-${i}` });
  }
  const { projects: all } = await a.client.projects.listProjects({ tenantId: a.tenantId });
  const seen = [];
  for await (const p of pages(a.client.projects.listProjects, { tenantId: a.tenantId, pageSize: 1 }, (r) => r.projects)) {
    seen.push(p.id);
  }
  assert.ok(all.length >= 3);
  assert.deepEqual(seen, all.map((p) => p.id));
});

test("modifyLoadBalancer reads again when another writer wins and keeps both changes", async () => {
  const { loadBalancer: lb } = await a.client.loadBalancers.createLoadBalancer(lbRequest(a, {}));
  let calls = 0;
  const up = await modifyLoadBalancer(a.client.loadBalancers, a.tenantId, lb.id, async (current) => {
    calls++;
    if (calls === 1) {
      // Another writer lands between this read and this update.
      await a.client.loadBalancers.updateLoadBalancer(
        maskedUpdate({ tenantId: a.tenantId, loadBalancerId: lb.id, redirectHttpToHttps: true }),
      );
    }
    return { forwarding: [...current.forwarding, { entryProtocol: "http", entryPort: 8080, targetProtocol: "http", targetPort: 80 }], deletionProtection: true };
  });
  assert.equal(calls, 2);
  assert.equal(up.redirectHttpToHttps, true);
  assert.equal(up.forwarding.length, 2);
  assert.equal(up.deletionProtection, true);
  await assert.rejects(
    a.client.loadBalancers.deleteLoadBalancer({ tenantId: a.tenantId, loadBalancerId: lb.id }),
    (err) => err.code === "INVALID_STATE" && err.stateReason === "deletionProtected",
  );
  // A stale etag is refused with the reason the helper retries on.
  await assert.rejects(
    a.client.loadBalancers.updateLoadBalancer(
      maskedUpdate({ tenantId: a.tenantId, loadBalancerId: lb.id, etag: lb.etag, redirectHttpToHttps: false }),
    ),
    (err) => err.code === "INVALID_STATE" && err.stateReason === "etagMismatch",
  );
});
