// The SDK in headless Chromium: a page bundled from test/browser/page.mjs is served from its own
// loopback origin and calls the live server through connect-web (Connect and gRPC-Web, over CORS).
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { randomBytes } from "node:crypto";
import { build } from "esbuild";
import { chromium } from "playwright-core";
import { startServer } from "./helpers/server.mjs";
import { defaultRegion, setupTenant } from "./helpers/fixture.mjs";

const chromiumPath = process.env.BC_TEST_CHROMIUM ?? "/usr/bin/chromium";
const chromiumArgs = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

let server;
let fx;
let site; // { url, close }
let context;
let workDir;

before(async () => {
  assert.ok(existsSync(chromiumPath), `${chromiumPath} is missing: apt-get install -y chromium`);
  server = await startServer();
  fx = await setupTenant(server, { label: "browser" });
  workDir = mkdtempSync(join(tmpdir(), "bc-sdk-browser-"));
  await build({
    entryPoints: [fileURLToPath(new URL("./browser/page.mjs", import.meta.url))],
    bundle: true,
    format: "esm",
    platform: "browser",
    target: "es2022",
    outfile: join(workDir, "app.js"),
    logLevel: "warning",
  });
  writeFileSync(
    join(workDir, "index.html"),
    '<!doctype html><meta charset="utf-8"><title>sdk</title>' +
      '<p id="status">loading</p><pre id="result"></pre><script type="module" src="/app.js"></script>',
  );
  site = await serveStatic(workDir);
  // A fresh profile per run: nothing cached or remembered from an earlier one.
  context = await chromium.launchPersistentContext(join(workDir, "profile"), {
    executablePath: chromiumPath,
    headless: true,
    args: chromiumArgs,
  });
});

after(async () => {
  await context?.close();
  await site?.close();
  await server?.stop();
  if (workDir) rmSync(workDir, { recursive: true, force: true });
});

test("the bundled SDK calls the server from a page on another origin", async () => {
  const page = await context.newPage();
  const pageErrors = [];
  page.on("pageerror", (err) => pageErrors.push(String(err)));
  page.on("console", (msg) => {
    if (msg.type() === "error") pageErrors.push(msg.text());
  });
  await page.goto(`${site.url}/index.html`);
  await page.waitForFunction(() => document.getElementById("status")?.textContent === "loaded");
  assert.notEqual(new URL(site.url).origin, new URL(server.url).origin, "the page is cross-origin");

  const name = `web-${randomBytes(3).toString("hex")}`;
  await page.evaluate((cfg) => window.runScenario(cfg), {
    baseUrl: server.url,
    token: fx.token,
    tenantId: fx.tenantId,
    poolId: fx.poolId,
    region: defaultRegion,
    name,
    idempotencyKey: `browser-${randomBytes(8).toString("hex")}`,
  });
  const result = JSON.parse((await page.textContent("#result")) ?? "{}");

  assert.equal(result.error, undefined, `the page failed: ${result.error}\n${pageErrors.join("\n")}`);
  assert.equal(result.ok, true);
  assert.match(result.created.id, /^plb_/);
  assert.equal(result.created.name, name);
  assert.equal(result.created.state, "pending");
  assert.equal(result.created.tenantId, fx.tenantId);
  assert.deepEqual(result.got, { id: result.created.id, name, poolId: fx.poolId, pool: true });
  assert.ok(result.listed.includes(result.created.id));
  for (const transport of ["connect", "grpcWeb"]) {
    assert.deepEqual(
      result.errors[transport],
      { isPlatformError: true, code: "INVALID_INPUT", field: "name" },
      `${transport} error as seen in the page`,
    );
  }
  await page.close();
});

/** serveStatic serves dir on a free loopback port: { url, close }. */
async function serveStatic(dir) {
  const types = { ".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8" };
  const srv = createServer((req, res) => {
    const path = new URL(req.url ?? "/", "http://x").pathname;
    const file = { "/": "index.html", "/index.html": "index.html", "/app.js": "app.js" }[path];
    if (!file) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { "Content-Type": types[file.slice(file.lastIndexOf("."))], "Cache-Control": "no-store" });
    res.end(readFileSync(join(dir, file)));
  });
  await new Promise((res) => srv.listen(0, "127.0.0.1", res));
  const { port } = srv.address();
  return {
    url: `http://127.0.0.1:${port}`,
    close: () => new Promise((res) => srv.close(res)),
  };
}
