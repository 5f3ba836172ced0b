// Builds and starts the platform server (`bc-server dev`) for the SDK's tests.
//
// One server serves a whole `npm test` run: with-server.mjs starts it and hands its address to the
// test files through the environment. A test file run on its own starts its own server instead.
import { spawn, execFileSync } from "node:child_process";
import { mkdtempSync, openSync, readFileSync, existsSync, closeSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";

/** repoRoot is the Go module root (two levels above sdk/ts). */
export const repoRoot = resolve(fileURLToPath(new URL("../../../..", import.meta.url)));

const readyTimeoutMs = 180_000; // a cold dev start migrates a database and loads the authz model
const stopTimeoutMs = 15_000;

/**
 * serverBinary returns the path of a bc-server binary: $BC_SERVER_BIN when set, otherwise one built
 * now from the repository into a fresh temporary directory.
 */
export function serverBinary() {
  if (process.env.BC_SERVER_BIN) return process.env.BC_SERVER_BIN;
  const out = join(mkdtempSync(join(tmpdir(), "bc-sdk-bin-")), "bc-server");
  execFileSync("go", ["build", "-o", out, "./cmd/bc-server"], { cwd: repoRoot, stdio: "inherit" });
  return out;
}

/**
 * startServer starts `bc-server dev` on a free loopback port and resolves once it wrote its ready
 * file: { url, adminToken, logFile, stop({ keepLog }) }; stop removes the log unless keepLog is set.
 * When BC_TEST_SERVER_URL and BC_TEST_ADMIN_TOKEN are set it returns that server instead, and stop()
 * leaves it running.
 */
export async function startServer({ binary } = {}) {
  const { BC_TEST_SERVER_URL: url, BC_TEST_ADMIN_TOKEN: adminToken } = process.env;
  if (url && adminToken) {
    return {
      url,
      adminToken,
      simulatorUrl: process.env.BC_TEST_SIMULATOR_URL || undefined,
      logFile: process.env.BC_TEST_SERVER_LOG ?? "",
      stop: async () => {},
    };
  }
  const bin = binary ?? serverBinary();
  const dir = mkdtempSync(join(tmpdir(), "bc-sdk-server-"));
  const readyFile = join(dir, "ready.json");
  const logFile = join(dir, "server.log");
  const log = openSync(logFile, "a");
  const child = spawn(bin, ["dev", "--addr", "127.0.0.1:0", "--ready-file", readyFile], {
    cwd: repoRoot,
    stdio: ["ignore", log, log],
    // Idle watches get a heartbeat every 300 ms (15 s in production), so tests see them.
    env: { BC_WATCH_HEARTBEAT: "300ms", ...process.env },
  });
  closeSync(log);
  let exited = null;
  const exit = new Promise((res) => child.once("exit", (code, signal) => res((exited = { code, signal }))));

  const stop = async ({ keepLog = false } = {}) => {
    if (exited) return;
    child.kill("SIGTERM");
    const done = await Promise.race([exit, sleep(stopTimeoutMs, "timeout")]);
    if (done === "timeout") {
      child.kill("SIGKILL");
      await exit;
      throw new Error(`bc-server did not stop within ${stopTimeoutMs} ms of SIGTERM (log: ${logFile})`);
    }
    if (!keepLog) rmSync(dir, { recursive: true, force: true });
  };

  const deadline = Date.now() + readyTimeoutMs;
  while (Date.now() < deadline) {
    if (exited) {
      throw new Error(`bc-server exited before it was ready (${JSON.stringify(exited)}):\n${tail(logFile)}`);
    }
    const ready = readReady(readyFile);
    if (ready) return { ...ready, logFile, stop };
    await sleep(100);
  }
  await stop({ keepLog: true }).catch(() => {});
  throw new Error(`bc-server wrote no ready file within ${readyTimeoutMs} ms:\n${tail(logFile)}`);
}

// The server may be caught mid-write; a file that does not parse yet is not ready.
function readReady(path) {
  if (!existsSync(path)) return undefined;
  try {
    const ready = JSON.parse(readFileSync(path, "utf8"));
    if (typeof ready.url === "string" && typeof ready.adminToken === "string") {
      return {
        url: ready.url.replace(/\/$/, ""),
        adminToken: ready.adminToken,
        ...(typeof ready.simulatorUrl === "string" ? { simulatorUrl: ready.simulatorUrl } : {}),
      };
    }
  } catch {
    // not complete yet
  }
  return undefined;
}

/** tail returns the last lines of the server's log, for failure messages. */
export function tail(path, lines = 40) {
  try {
    return readFileSync(path, "utf8").split("\n").slice(-lines).join("\n");
  } catch {
    return "(no log)";
  }
}
