// The console in headless Chromium, served by a real `bc-server dev` (its embedded build of
// web/dist): sign in, a create the server refuses (every field it names is marked), a valid create
// whose state turns ready live through WatchEvents (the page never lists again nor reloads), the
// detail view, an update and a delete. Screenshots are kept in $BC_CONSOLE_ARTIFACTS or a fresh
// temporary directory, printed at the end.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { closeSync, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync } from "node:fs";
import { spawn } from "node:child_process";
import { setTimeout as sleep } from "node:timers/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import { chromium } from "playwright-core";
import { repoRoot, serverBinary, tail } from "../../sdk/ts/test/helpers/server.mjs";
import { adminClient, setupTenant } from "../../sdk/ts/test/helpers/fixture.mjs";

const chromiumPath = process.env.BC_TEST_CHROMIUM ?? "/usr/bin/chromium";
const chromiumArgs = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--no-first-run",
];
// Generous bounds on waiting for the reconcilers; the test asserts outcomes, not speed.
const converge = 120_000;

let server;
let fx;
let browser;
let profile;
let instanceId;
const artifacts = process.env.BC_CONSOLE_ARTIFACTS || mkdtempSync(join(tmpdir(), "bc-console-artifacts-"));

before(async () => {
  assert.ok(existsSync(chromiumPath), `${chromiumPath} is missing: apt-get install -y chromium`);
  mkdirSync(artifacts, { recursive: true });
  server = await startDev();
  // The tenant's provider account points at the dev server's DigitalOcean simulator, so its
  // load balancers converge.
  process.env.BC_TEST_PROVIDER_API_URL = server.simulatorUrl;
  fx = await setupTenant(server, { label: "console" });
  // One running instance in the pool, for the load balancer to reach.
  const admin = adminClient(server);
  await admin.pools.updatePool({
    tenantId: fx.tenantId,
    poolId: fx.poolId,
    policy: { flavors: [{ name: "small", size: "s-1vcpu-1gb" }] },
  });
  await admin.pools.setQuota({ tenantId: fx.tenantId, poolId: fx.poolId, resource: "instances", limit: 2n });
  const { instance } = await fx.client.instances.createInstance({
    tenantId: fx.tenantId,
    poolId: fx.poolId,
    name: "vm",
    region: "nyc3",
    flavor: "small",
  });
  instanceId = instance.id;
  const deadline = Date.now() + converge;
  for (;;) {
    const got = await fx.client.instances.getInstance({ tenantId: fx.tenantId, instanceId });
    if (got.instance?.state === "running") break;
    if (Date.now() > deadline) throw new Error(`instance ${instanceId} is ${got.instance?.state}, not running`);
    await sleep(250);
  }
  profile = mkdtempSync(join(tmpdir(), "bc-console-profile-"));
  browser = await chromium.launchPersistentContext(profile, {
    executablePath: chromiumPath,
    headless: true,
    args: chromiumArgs,
    viewport: { width: 1280, height: 900 },
  });
});

after(async () => {
  await browser?.close();
  await server?.stop();
  if (profile) rmSync(profile, { recursive: true, force: true });
  console.error(`console test screenshots: ${artifacts}`);
});

/**
 * startDev starts `bc-server dev` on a free loopback port and resolves with its ready file
 * ({ url, adminToken, simulatorUrl, ... }) and stop().
 */
async function startDev() {
  const dir = mkdtempSync(join(tmpdir(), "bc-console-server-"));
  const readyFile = join(dir, "ready.json");
  const logFile = join(dir, "server.log");
  const log = openSync(logFile, "a");
  const child = spawn(serverBinary(), ["dev", "--addr", "127.0.0.1:0", "--ready-file", readyFile], {
    cwd: repoRoot,
    stdio: ["ignore", log, log],
  });
  closeSync(log);
  let exited = null;
  const exit = new Promise((res) => child.once("exit", (code, signal) => res((exited = { code, signal }))));
  const stop = async () => {
    if (exited) return;
    child.kill("SIGTERM");
    if ((await Promise.race([exit, sleep(15_000, "timeout")])) === "timeout") {
      child.kill("SIGKILL");
      await exit;
    }
    rmSync(dir, { recursive: true, force: true });
  };
  const deadline = Date.now() + 180_000;
  while (Date.now() < deadline) {
    if (exited) throw new Error(`bc-server exited before it was ready (${JSON.stringify(exited)}):\n${tail(logFile)}`);
    try {
      const ready = JSON.parse(readFileSync(readyFile, "utf8"));
      if (ready.url && ready.adminToken && ready.simulatorUrl) {
        return { ...ready, url: ready.url.replace(/\/$/, ""), logFile, stop };
      }
    } catch {
      // not written yet
    }
    await sleep(100);
  }
  await stop();
  throw new Error(`bc-server wrote no ready file within 180 s:\n${tail(logFile)}`);
}

test("sign in, refused create marks the fields, live create, detail, update, delete", async () => {
  const page = await browser.newPage();
  const pageErrors = [];
  page.on("pageerror", (err) => pageErrors.push(String(err)));
  page.on("console", (msg) => {
    // A failed load is reported below by its response; API refusals (401, 400, 404) are expected.
    if (msg.type() === "error" && !/^Failed to load resource/.test(msg.text())) pageErrors.push(msg.text());
  });
  page.on("response", (res) => {
    const path = new URL(res.url()).pathname;
    if (res.status() >= 400 && !path.startsWith("/bettercompute.")) pageErrors.push(`${res.status()} ${path}`);
  });
  const calls = [];
  page.on("request", (req) => {
    const path = new URL(req.url()).pathname;
    if (path.startsWith("/bettercompute.")) calls.push(path.split("/").pop());
  });
  const shot = (name) => page.screenshot({ path: join(artifacts, name), fullPage: true });
  try {
    await scenario(page, shot, calls, pageErrors);
  } catch (err) {
    await shot("failed.png").catch(() => {});
    throw err;
  }
  await page.close();
});

async function scenario(page, shot, calls, pageErrors) {

  // The page comes from the server itself, at /.
  const resp = await page.goto(`${server.url}/`);
  assert.equal(resp.status(), 200);
  assert.match(resp.headers()["content-security-policy"] ?? "", /connect-src 'self'/);
  await page.waitForSelector("#signin");

  // A wrong token is refused on the sign-in form.
  await page.fill("#signin-tenant", fx.tenantId);
  await page.fill("#signin-token", "bct_not-a-token");
  await page.click("#signin-submit");
  await page.waitForFunction(() => /not valid/.test(document.getElementById("signin-error")?.textContent ?? ""));
  await shot("0-signin-refused.png");

  await page.fill("#signin-token", fx.token);
  await page.click("#signin-submit");
  await page.waitForSelector("#lbs");
  await page.waitForSelector('#live[data-state="live"]');
  const signedIn = calls.length;
  const listsSince = () => calls.slice(signedIn).filter((c) => c === "ListLoadBalancers").length;
  assert.equal(await page.textContent("#tenant"), fx.tenantId);

  // Create with two bad fields: the server's violations mark both, nothing is created.
  await page.click("#create-open");
  await page.fill('#create [name="name"]', "Bad_Name");
  await page.fill('#create [data-field="forwarding[0].entryPort"] input', "70000");
  await page.click("#create-submit");
  await page.waitForSelector('#create [data-field="name"].invalid');
  await page.waitForSelector('#create [data-field="forwarding[0].entryPort"].invalid');
  const marked = await page.$$eval("#create .invalid", (els) => els.map((e) => e.getAttribute("data-field")));
  assert.deepEqual(marked.sort(), ["forwarding[0].entryPort", "name"]);
  assert.match(await page.textContent('#create [data-field="name"] .msg'), /\S/);
  assert.equal(await page.getAttribute('#create [data-field="name"] input', "aria-invalid"), "true");
  assert.equal(await page.$$eval("#lbs tbody tr", (rows) => rows.length), 0);
  await shot("1-create-refused.png");

  // Fixed, it is created pending and turns ready with an address, live.
  const name = `web-${randomBytes(3).toString("hex")}`;
  await page.fill('#create [name="name"]', name);
  await page.fill('#create [data-field="forwarding[0].entryPort"] input', "80");
  // A provider setting out of range is marked by the server's answer too.
  await page.fill('#create [name="sizeUnit"]', "101");
  await page.click("#create-submit");
  await page.waitForSelector('#create [data-field="sizeUnit"].invalid');
  assert.deepEqual(await page.$$eval("#create .invalid", (els) => els.map((e) => e.getAttribute("data-field"))), ["sizeUnit"]);
  // Provider settings, each kept: two nodes, strong ciphers, internal network, labels.
  await page.fill('#create [name="sizeUnit"]', "2");
  await page.selectOption('#create [name="cipher"]', "strong");
  await page.selectOption('#create [name="network"]', "internal");
  await page.check('#create [name="keepalive"]');
  await page.fill('#create [name="labels"]', "team=web, env=prod");
  await page.click("#create-submit");
  const row = `#lbs tbody tr[data-name="${name}"]`;
  await page.waitForSelector(row);
  assert.equal(await page.$$eval("#create .invalid", (els) => els.length), 0);
  await page.waitForSelector(`${row} td.state[data-state="ready"]`, { timeout: converge });
  await page.waitForFunction((sel) => (document.querySelector(`${sel} td.address`)?.textContent ?? "") !== "", row);
  const id = await page.getAttribute(row, "data-lb-id");
  assert.match(id, /^plb_/);
  // Live means the stream: once signed in the page watched events and never listed again; the
  // states came from the events (each followed by a get of that load balancer).
  assert.equal(listsSince(), 0, calls.join(","));
  assert.ok(calls.includes("WatchEvents"), calls.join(","));
  await shot("2-created-ready.png");

  // The detail view: fields, reached instances, events and usage.
  await page.click(row);
  await page.waitForSelector("#detail:not([hidden])");
  await page.waitForSelector('#events li[data-type="providerLoadBalancer.created"]');
  await page.waitForSelector('#events li[data-type="providerLoadBalancer.ready"]');
  assert.equal(await page.textContent('#detail dd[data-key="state"]'), "ready");
  assert.equal(await page.textContent('#detail dd[data-key="name"]'), name);
  assert.equal(await page.textContent('#detail dd[data-key="size unit"]'), "2");
  assert.equal(await page.textContent('#detail dd[data-key="tls cipher policy"]'), "strong");
  assert.equal(await page.textContent('#detail dd[data-key="network"]'), "internal");
  assert.equal(await page.textContent('#detail dd[data-key="backend keepalive"]'), "yes");
  assert.equal(await page.textContent('#detail dd[data-key="http idle timeout"]'), "default");
  assert.equal(await page.textContent('#detail dd[data-key="labels"]'), "env=prod, team=web");
  // The pool's running instance is what it reaches (it turns up with the state the events bring).
  await page.waitForFunction(
    (id) => [...document.querySelectorAll("#reached li code")].some((c) => c.textContent === id),
    instanceId,
    { timeout: converge },
  );
  await page.waitForSelector("#usage ul, #usage [data-empty]");
  await shot("3-detail.png");

  // A refused update marks its field too, and changes nothing.
  await page.fill('#update [data-field="forwarding[0].entryPort"] input', "0");
  await page.click("#update-submit");
  await page.waitForSelector('#update [data-field="forwarding[0].entryPort"].invalid');
  assert.equal(await page.textContent('#detail dd[data-key="forwarding"]'), "http:80 → http:8080");
  await page.fill('#update [data-field="forwarding[0].entryPort"] input', "80");

  // An idle timeout out of range is marked on the update form.
  await page.fill('#update [name="idle"]', "20");
  await page.click("#update-submit");
  await page.waitForSelector('#update [data-field="httpIdleTimeoutSeconds"].invalid');
  await page.fill('#update [name="idle"]', "120");

  // Update: add a health check and an idle timeout; the detail shows them, and the load balancer
  // converges again.
  await page.selectOption('#update [name="hcProtocol"]', "http");
  await page.fill('#update [name="hcPort"]', "8080");
  await page.fill('#update [name="hcPath"]', "/healthz");
  await page.click("#update-submit");
  await page.waitForFunction(() => document.querySelector('#detail dd[data-key="health check"]')?.textContent === "http:8080/healthz");
  assert.equal(await page.textContent('#detail dd[data-key="http idle timeout"]'), "120 s");
  assert.equal(await page.textContent('#detail dd[data-key="size unit"]'), "2");
  assert.equal(await page.$$eval("#update .invalid", (els) => els.length), 0);
  await page.waitForSelector('#events li[data-type="providerLoadBalancer.updated"]');
  await page.waitForSelector(`${row} td.state[data-state="ready"]`, { timeout: converge });
  await shot("4-updated.png");

  // Delete: two steps; it goes deleting, then leaves the list when the provider is done.
  await page.click("#delete");
  await page.click("#delete-confirm");
  await page.waitForFunction(
    (sel) => {
      const s = document.querySelector(`${sel} td.state`)?.getAttribute("data-state");
      return s === "deleting" || s === undefined || s === null;
    },
    row,
  );
  await page.waitForSelector(row, { state: "detached", timeout: converge });
  await page.waitForSelector('#events li[data-type="providerLoadBalancer.deleted"]');
  assert.equal(listsSince(), 0, calls.join(","));
  await shot("5-deleted.png");

  assert.deepEqual(pageErrors, []);
}
