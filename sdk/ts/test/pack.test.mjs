// The package as a user gets it: `npm pack` (whose prepack builds dist/), the tarball installed
// into a fresh npm project in a temporary directory, and test/fresh/consumer.mjs run there against
// the live `bc-server dev`. The consumer imports only the package's public entry points.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { copyFileSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { startServer } from "./helpers/server.mjs";

const sdkDir = fileURLToPath(new URL("..", import.meta.url));
let server;
let work;

before(async () => {
  server = await startServer();
  work = mkdtempSync(join(tmpdir(), "bc-sdk-pack-"));
});

after(async () => {
  if (work) rmSync(work, { recursive: true, force: true });
  await server?.stop();
});

function npm(args, cwd) {
  return execFileSync("npm", [...args, "--no-audit", "--no-fund", "--loglevel=error"], { cwd, encoding: "utf8" });
}

test("npm pack ships a package that installs, imports and calls the server from a fresh project", () => {
  const [packed] = JSON.parse(npm(["pack", "--json", "--pack-destination", work], sdkDir));
  const files = packed.files.map((f) => f.path);
  for (const want of ["dist/index.js", "dist/index.d.ts", "dist/node.js", "dist/gen/buf/validate/validate_pb.js", "package.json", "README.md"]) {
    assert.ok(files.includes(want), `${want} is in the tarball (${files.length} files)`);
  }
  assert.ok(!files.some((f) => f.startsWith("src/") || f.startsWith("test/")), "no sources or tests shipped");

  const project = join(work, "app");
  execFileSync("mkdir", ["-p", project]);
  writeFileSync(join(project, "package.json"), JSON.stringify({ name: "fresh-app", private: true, type: "module" }));
  // The peer dependencies (@connectrpc/connect, @bufbuild/protobuf) are installed by npm itself.
  npm(["install", "--prefer-offline", join(work, packed.filename)], project);
  npm(["ls", "--all"], project); // fails on a missing or invalid (peer) dependency
  for (const shared of ["@connectrpc/connect", "@bufbuild/protobuf"]) {
    const installed = JSON.parse(npm(["query", `#${shared}`], project)).map((n) => n.location);
    assert.deepEqual(installed, [`node_modules/${shared}`], `one copy of ${shared}, the project's own`);
  }

  for (const f of readdirSync(join(sdkDir, "test", "fresh"))) copyFileSync(join(sdkDir, "test", "fresh", f), join(project, f));
  const run = spawnSync(process.execPath, ["consumer.mjs"], {
    cwd: project,
    encoding: "utf8",
    env: { ...process.env, BC_TEST_SERVER_URL: server.url, BC_TEST_ADMIN_TOKEN: server.adminToken },
    timeout: 120_000,
  });
  assert.equal(run.status, 0, `consumer failed:\n${run.stdout}\n${run.stderr}`);
  const summary = JSON.parse(run.stdout.trim().split("\n").at(-1));
  assert.ok(summary.checks >= 5, `consumer ran ${summary.checks} checks`);
});
