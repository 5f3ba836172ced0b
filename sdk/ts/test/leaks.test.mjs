// Every way a watch or a wait ends leaves nothing open: no socket, no armed timer on the client, no
// WatchEvents stream on the server. Each case takes a garbage collection while its stream is open,
// since that is what made Node's fetch lose track of a call's signal (see src/close-on-abort.ts):
// before the fix an aborted watch then kept its connection, and the test process, alive.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { setTimeout as sleep } from "node:timers/promises";
import { createComputeClient, waitForLoadBalancer, WaitTimeoutError, watchEvents } from "../dist/index.js";
import { createNodeComputeClient } from "../dist/node.js";
import { startServer } from "./helpers/server.mjs";
import { lbRequest, rejection, setupTenant } from "./helpers/fixture.mjs";

setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc");

let server;
let a;
let other; // a tenant a's token may not watch
let lb; // a's load balancer: its events are there to watch

before(async () => {
  server = await startServer();
  assert.ok(server.simulatorUrl, "the dev server names its simulator");
  process.env.BC_TEST_PROVIDER_API_URL ??= server.simulatorUrl;
  a = await setupTenant(server, { label: "leak", lbQuota: 10 });
  other = await setupTenant(server, { label: "leak-other", lbQuota: null });
  ({ loadBalancer: lb } = await a.client.loadBalancers.createLoadBalancer(lbRequest(a)));
});

after(async () => {
  await server?.stop();
});

/** opened counts the WatchEvents calls the clients below sent. */
let opened = 0;
const countWatches = (next) => (req) => {
  if (req.method.name === "WatchEvents") opened++;
  return next(req);
};

const flavours = {
  fetch: () => createComputeClient({ baseUrl: server.url, token: a.token, interceptors: [countWatches] }),
  // A fetch wrapper that drops the signal: only closeOnAbort can close what it opened.
  "fetch without the signal": () =>
    createComputeClient({
      baseUrl: server.url,
      token: a.token,
      interceptors: [countWatches],
      fetch: (input, init) => fetch(input, { ...init, signal: undefined }),
    }),
  "node http2": () => createNodeComputeClient({ baseUrl: server.url, token: a.token, interceptors: [countWatches] }),
  "node http1.1": () =>
    createNodeComputeClient({ baseUrl: server.url, token: a.token, httpVersion: "1.1", interceptors: [countWatches] }),
};

/** within fails the test when promise has not settled within ms (a stream that stays open hangs its loop). */
function within(promise, ms, what) {
  let timer;
  const late = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: still open ${ms} ms later`)), ms);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

/** resources counts what keeps this process alive: sockets and armed (ref'd) timers. */
function resources() {
  const n = { TCPSocketWrap: 0, Timeout: 0 };
  for (const r of process.getActiveResourcesInfo()) if (r in n) n[r]++;
  return n;
}

/** watchesEnded is the server's count of WatchEvents calls that have ended (every code). */
async function watchesEnded() {
  const res = await fetch(`${server.url}/metrics`);
  assert.equal(res.status, 200, "the API listener serves /metrics");
  let n = 0;
  for (const line of (await res.text()).split("\n")) {
    if (line.startsWith("bc_rpc_calls_total{") && line.includes('/WatchEvents"')) n += Number(line.split(" ").pop());
  }
  return n;
}

/**
 * leavesNothingOpen runs body and asserts that, once it returned and a short settle passed, the
 * process holds no more sockets or timers than before it and the server has ended every
 * WatchEvents stream body opened.
 */
async function leavesNothingOpen(label, body) {
  gc();
  await sleep(100);
  const base = resources();
  const endedBefore = await watchesEnded();
  const openedBefore = opened;
  await body();
  const streams = opened - openedBefore;
  assert.ok(streams > 0, "the case opened a stream");
  let now;
  let ended;
  for (const until = Date.now() + 5000; ; ) {
    now = resources();
    // The scrape's own socket is idle (unref'd) by the time resources() runs again.
    ended = (await watchesEnded()) - endedBefore;
    const clear = now.TCPSocketWrap <= base.TCPSocketWrap && now.Timeout <= base.Timeout && ended >= streams;
    if (clear) return;
    if (Date.now() > until) break;
    await sleep(100);
  }
  assert.fail(
    `${label}: left open: ${JSON.stringify(now)} against ${JSON.stringify(base)} before; server ended ${ended} of ${streams} watch streams`,
  );
}

for (const [name, make] of Object.entries(flavours)) {
  test(`${name}: a watcher stopped by its signal, left by break, failing, or past its deadline leaves nothing open`, { timeout: 60_000 }, async () => {
    const c = make();
    // Stopped by its signal while waiting for the next event.
    await leavesNothingOpen("stopped by its signal", async () => {
      const ac = new AbortController();
      const w = watchEvents(c, { tenantId: a.tenantId, types: ["none.such"] }, { signal: ac.signal });
      const loop = (async () => {
        for await (const ev of w) assert.fail(`yielded ${ev.type}`);
      })();
      await sleep(700); // a couple of heartbeats
      gc();
      ac.abort();
      await within(loop, 5000, "the watcher stopped by its signal");
      assert.equal(w.reconnects, 0);
    });
    // Left by break, with no signal at all.
    await leavesNothingOpen("left by break", async () => {
      const w = watchEvents(c, { tenantId: a.tenantId, resourceId: lb.id });
      for await (const ev of w) {
        assert.ok(ev.cursor > 0n);
        gc();
        break;
      }
    });
    // A final failure (a tenant the token may not read) is thrown by the loop.
    await leavesNothingOpen("a final failure", async () => {
      const w = watchEvents(c, { tenantId: other.tenantId });
      const err = await rejection(
        (async () => {
          for await (const ev of w) assert.fail(`yielded ${ev.type}`);
        })(),
      );
      assert.ok(err instanceof Error && err.name === "PlatformError", String(err));
    });
    // Past a deadline (AbortSignal.timeout).
    await leavesNothingOpen("past its deadline", async () => {
      const w = watchEvents(c, { tenantId: a.tenantId, types: ["none.such"] }, { signal: AbortSignal.timeout(1000) });
      const loop = (async () => {
        for await (const ev of w) assert.fail(`yielded ${ev.type}`);
      })();
      await sleep(500);
      gc();
      await within(loop, 5000, "the watcher past its deadline");
    });
    // A raw stream left by break: leaving the loop closes it (no abort needed).
    await leavesNothingOpen("a raw stream left by break", async () => {
      let first;
      for await (const m of c.events.watchEvents({ tenantId: a.tenantId, types: ["none.such"] }, { timeoutMs: 0 })) {
        first = m;
        gc();
        break;
      }
      assert.ok(first?.heartbeat);
    });
  });
}

test("waitForLoadBalancer leaves nothing open: ready, deadline, abort, a refused stream, a failed read", { timeout: 120_000 }, async () => {
  const c = flavours.fetch();
  await leavesNothingOpen("wait: ready", async () => {
    const gcSoon = setTimeout(gc, 200);
    const ready = await waitForLoadBalancer(c, a.tenantId, lb.id, { timeoutMs: 60_000 });
    clearTimeout(gcSoon);
    assert.equal(ready.state, "ready");
  });
  await leavesNothingOpen("wait: deadline", async () => {
    setTimeout(gc, 300);
    const late = await rejection(waitForLoadBalancer(c, a.tenantId, lb.id, { until: ["updating"], timeoutMs: 800 }));
    assert.ok(late instanceof WaitTimeoutError, String(late));
  });
  await leavesNothingOpen("wait: aborted", async () => {
    const ac = new AbortController();
    setTimeout(() => (gc(), ac.abort(new Error("stop"))), 500);
    const stopped = await rejection(waitForLoadBalancer(c, a.tenantId, lb.id, { until: ["updating"], signal: ac.signal }));
    assert.equal(stopped?.message, "stop");
  });
  // The stream refused: the wait polls, every hour here; its deadline must not leave that timer.
  const refusing = createComputeClient({
    baseUrl: server.url,
    token: a.token,
    interceptors: [countWatches],
    fetch: (input, init) =>
      String(typeof input === "string" ? input : input.url).endsWith("/WatchEvents")
        ? Promise.reject(new TypeError("fetch failed"))
        : fetch(input, init),
  });
  const base = resources();
  const polled = await rejection(
    waitForLoadBalancer(refusing, a.tenantId, lb.id, { until: ["updating"], timeoutMs: 500, pollIntervalMs: 3_600_000 }),
  );
  assert.ok(polled instanceof WaitTimeoutError, String(polled));
  await sleep(100);
  assert.ok(resources().Timeout <= base.Timeout, `a timer is left: ${JSON.stringify(resources())} against ${JSON.stringify(base)}`);
  // A read that fails (no such load balancer) rejects the wait; its stream is closed too.
  await leavesNothingOpen("wait: a failed read", async () => {
    const err = await rejection(waitForLoadBalancer(c, a.tenantId, "lb-doesnotexist", { timeoutMs: 60_000 }));
    assert.ok(err instanceof Error && err.name === "PlatformError", String(err));
  });
});
