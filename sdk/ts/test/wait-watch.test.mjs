// The helpers against a live `bc-server dev` (its reconcilers on the DigitalOcean simulator):
// waitForLoadBalancer over the stream and by polling, safe retries, and the resumable watch.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import {
  createComputeClient,
  EventWatcher,
  isPlatformError,
  LoadBalancerFailedError,
  waitForLoadBalancer,
  WaitTimeoutError,
  watchEvents,
} from "../dist/index.js";
import { startServer } from "./helpers/server.mjs";
import { lbRequest, rejection, setupTenant } from "./helpers/fixture.mjs";

let server;
let a;

before(async () => {
  server = await startServer();
  // Accounts on the dev server's DigitalOcean simulator, so load balancers turn ready.
  assert.ok(server.simulatorUrl, "the dev server names its simulator");
  process.env.BC_TEST_PROVIDER_API_URL ??= server.simulatorUrl;
  a = await setupTenant(server, { label: "wait", lbQuota: 20 });
});

after(async () => {
  await server?.stop();
});

const path = (input) => new URL(typeof input === "string" ? input : input.url).pathname;

/** client returns the tenant's client over fetchFn (and the SDK's other options). */
function client(fetchFn, options = {}) {
  return createComputeClient({ baseUrl: server.url, token: a.token, fetch: fetchFn, ...options });
}

test("waitForLoadBalancer: ready over the stream, deleted, and a deadline that passes", async () => {
  const { loadBalancer: lb } = await a.client.loadBalancers.createLoadBalancer(lbRequest(a));
  assert.equal(lb.state, "pending");
  const ready = await waitForLoadBalancer(a.client, a.tenantId, lb.id, { timeoutMs: 60_000, pollIntervalMs: 3_600_000 });
  assert.equal(ready.state, "ready");
  assert.ok(ready.address);

  const late = await rejection(waitForLoadBalancer(a.client, a.tenantId, lb.id, { until: ["updating"], timeoutMs: 300 }));
  assert.ok(late instanceof WaitTimeoutError, String(late));
  assert.equal(late.loadBalancer?.state, "ready");

  await a.client.loadBalancers.deleteLoadBalancer({ tenantId: a.tenantId, loadBalancerId: lb.id });
  const gone = await waitForLoadBalancer(a.client, a.tenantId, lb.id, { until: ["deleted"], timeoutMs: 60_000 });
  assert.equal(gone.state, "deleted");
  // Waiting for ready on a deleted one fails at once.
  const failed = await rejection(waitForLoadBalancer(a.client, a.tenantId, lb.id, { until: ["ready"], timeoutMs: 60_000 }));
  assert.ok(failed instanceof LoadBalancerFailedError, String(failed));
});

test("waitForLoadBalancer polls when the stream is refused", async () => {
  let refused = 0;
  const c = client((input, init) => {
    if (path(input).endsWith("/WatchEvents")) {
      refused++;
      return Promise.reject(new TypeError("fetch failed"));
    }
    return fetch(input, init);
  });
  const { loadBalancer: lb } = await c.loadBalancers.createLoadBalancer(lbRequest(a));
  const ready = await waitForLoadBalancer(c, a.tenantId, lb.id, { timeoutMs: 60_000, pollIntervalMs: 100 });
  assert.equal(ready.state, "ready");
  assert.ok(refused >= 1);
});

test("retry: reads and keyed creates are resent after a lost answer; other mutations are not", async () => {
  const sent = new Map();
  let losePath = "";
  let lose = 0;
  const c = client(
    async (input, init) => {
      const p = path(input).split("/").pop();
      sent.set(p, (sent.get(p) ?? 0) + 1);
      const res = await fetch(input, init);
      if (p === losePath && lose > 0) {
        lose--;
        await res.arrayBuffer();
        throw new TypeError("fetch failed"); // the server did it; the answer never came
      }
      return res;
    },
    { retry: { initialBackoffMs: 5, maxBackoffMs: 20 } },
  );
  const arm = (p, n) => {
    losePath = p;
    lose = n;
    sent.clear();
  };
  const before = (await a.client.loadBalancers.listLoadBalancers({ tenantId: a.tenantId })).loadBalancers.length;

  arm("CreateLoadBalancer", 2);
  const { loadBalancer: lb } = await c.loadBalancers.createLoadBalancer(lbRequest(a));
  assert.equal(sent.get("CreateLoadBalancer"), 3);
  const listed = (await a.client.loadBalancers.listLoadBalancers({ tenantId: a.tenantId })).loadBalancers;
  assert.equal(listed.length, before + 1);
  assert.ok(listed.some((x) => x.id === lb.id));

  arm("GetLoadBalancer", 1);
  await c.loadBalancers.getLoadBalancer({ tenantId: a.tenantId, loadBalancerId: lb.id });
  assert.equal(sent.get("GetLoadBalancer"), 2);

  arm("ListLoadBalancers", 10);
  const down = await rejection(c.loadBalancers.listLoadBalancers({ tenantId: a.tenantId }));
  assert.ok(isPlatformError(down, "UNAVAILABLE"), String(down));
  assert.equal(sent.get("ListLoadBalancers"), 4);

  arm("CreateLoadBalancer", 1);
  const unkeyed = await rejection(c.loadBalancers.createLoadBalancer(lbRequest(a, { idempotencyKey: "" })));
  assert.ok(isPlatformError(unkeyed, "UNAVAILABLE"), String(unkeyed));
  assert.equal(sent.get("CreateLoadBalancer"), 1);

  arm("UpdateLoadBalancer", 1);
  const upd = await rejection(c.loadBalancers.updateLoadBalancer({ tenantId: a.tenantId, loadBalancerId: lb.id, redirectHttpToHttps: true }));
  assert.ok(isPlatformError(upd, "UNAVAILABLE"), String(upd));
  assert.equal(sent.get("UpdateLoadBalancer"), 1);

  arm("", 0);
  const bad = await rejection(c.loadBalancers.getLoadBalancer({ tenantId: a.tenantId, loadBalancerId: "bad" }));
  assert.ok(isPlatformError(bad, "INVALID_INPUT"));
  assert.equal(sent.get("GetLoadBalancer"), 1);
});

test("watchEvents: heartbeats keep an idle stream open, are never yielded, and move the cursor", { timeout: 60_000 }, async () => {
  const { nextCursor: head } = await a.client.events.listEvents({ tenantId: a.tenantId, limit: 1000 });
  assert.ok(head > 0n);
  const stop = AbortSignal.timeout(1500);
  const w = watchEvents(a.client, { tenantId: a.tenantId, types: ["none.such"] }, { signal: stop, idleTimeoutMs: 1000 });
  for await (const ev of w) {
    assert.fail(`yielded ${ev.type}`);
  }
  assert.equal(w.reconnects, 0);
  assert.ok(w.cursor >= head, `cursor ${w.cursor}, head ${head}`);
  // A raw stream sees them. The stream is aborted before the loop is left, so leaving it never
  // waits on an open response body.
  const raw = new AbortController();
  const deadline = setTimeout(() => raw.abort(), 5000);
  let first;
  try {
    for await (const m of a.client.events.watchEvents({ tenantId: a.tenantId, types: ["none.such"] }, { signal: raw.signal })) {
      first = m;
      raw.abort();
      break;
    }
  } catch (err) {
    if (first === undefined) throw err;
  } finally {
    clearTimeout(deadline);
  }
  assert.ok(first?.heartbeat && !first.event);
});

test("watchEvents: a stream cut mid-way is reopened from the cursor; nothing twice, nothing lost", { timeout: 60_000 }, async () => {
  const fx = await setupTenant(server, { label: "cut", lbQuota: 10 });
  const made = [];
  for (let i = 0; i < 4; i++) {
    made.push((await fx.client.loadBalancers.createLoadBalancer(lbRequest(fx))).loadBalancer.id);
  }
  let streams = 0;
  const cutting = async (input, init) => {
    const res = await fetch(input, init);
    if (!path(input).endsWith("/WatchEvents") || !res.body) return res;
    streams++;
    const reader = res.body.getReader();
    let left = 700;
    const body = new ReadableStream({
      async pull(ctl) {
        if (left <= 0) {
          ctl.error(new TypeError("terminated: other side closed"));
          await reader.cancel().catch(() => {});
          return;
        }
        const { done, value } = await reader.read();
        if (done) return ctl.close();
        const chunk = value.subarray(0, left);
        left -= chunk.length;
        ctl.enqueue(chunk);
      },
      // A consumer that stops reading (the watcher, once it has what it wanted) must close the
      // real stream too, or its open connection keeps this process alive.
      cancel(reason) {
        return reader.cancel(reason);
      },
    });
    return new Response(body, { status: res.status, headers: res.headers });
  };
  const c = createComputeClient({ baseUrl: server.url, token: fx.token, fetch: cutting, defaultTimeoutMs: 100 });
  const ac = new AbortController();
  const w = new EventWatcher(c, { tenantId: fx.tenantId, types: ["providerLoadBalancer.created"] }, { signal: ac.signal, initialBackoffMs: 5 });
  const got = [];
  const timer = setTimeout(() => ac.abort(), 30_000);
  for await (const ev of w) {
    got.push(ev);
    if (got.length === made.length) break;
  }
  clearTimeout(timer);
  ac.abort();
  assert.deepEqual(got.map((e) => e.resourceId), made);
  assert.equal(w.cursor, got.at(-1).cursor);
  assert.ok(streams >= 2, `${streams} streams`);
});
