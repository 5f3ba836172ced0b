// Run by pack.test.mjs inside a fresh npm project that installed the packed SDK: it uses the
// package exactly as a user's code would (its public entry points, its peer dependencies from the
// project's own node_modules) against a live server. Exits non-zero on the first failed check;
// the last line of its output is a JSON summary.
import assert from "node:assert/strict";
import { ConnectError } from "@connectrpc/connect";
import { createComputeClient, PlatformError, ViolationsSchema } from "@better-compute/sdk";
import { createNodeComputeClient } from "@better-compute/sdk/node";
import { ViolationsSchema as DeepViolationsSchema } from "@better-compute/sdk/buf/validate";

const url = process.env.BC_TEST_SERVER_URL;
const token = process.env.BC_TEST_ADMIN_TOKEN;
let checks = 0;
const check = (fn) => {
  fn();
  checks++;
};

const admin = createComputeClient({ baseUrl: url, token });
const nodeAdmin = createNodeComputeClient({ baseUrl: url, token, transport: "grpc" });
const tenantId = `fresh-${Date.now().toString(36)}-${Math.random().toString(16).slice(2, 8)}`;

const { tenant } = await admin.tenants.createTenant({ tenantId, displayName: "fresh project" });
check(() => assert.equal(tenant?.id, tenantId));
const { tenant: viaGrpc } = await nodeAdmin.tenants.getTenant({ tenantId });
check(() => assert.equal(viaGrpc?.id, tenantId));
check(() => assert.equal(ViolationsSchema.typeName, "buf.validate.Violations"));
check(() => assert.equal(DeepViolationsSchema, ViolationsSchema));

let err;
try {
  await admin.tenants.createTenant({ tenantId: "no spaces allowed", displayName: "" });
} catch (e) {
  err = e;
}
check(() => assert.ok(err instanceof PlatformError, String(err)));
check(() => assert.equal(err.code, "INVALID_INPUT"));
// One copy of @connectrpc/connect: the SDK's ConnectError is the project's ConnectError.
check(() => assert.ok(err.cause instanceof ConnectError));

// Every violation, and the server's request id.
check(() => assert.ok(err.violations.length >= 1 && err.violations.some((v) => v.field === "tenantId"), JSON.stringify(err.violations)));
check(() => assert.match(err.requestId ?? "", /^req_[0-9a-f]{32}$/));
check(() => assert.equal(err.field, err.violations[0].field));

// Nothing listening: UNAVAILABLE, over fetch and over Node's http2 alike; an abort stays an abort.
for (const unreachableClient of [
  createComputeClient({ baseUrl: "http://127.0.0.1:9", token }),
  createNodeComputeClient({ baseUrl: "http://127.0.0.1:9", token }),
]) {
  let down;
  try {
    await unreachableClient.tenants.getTenant({ tenantId });
  } catch (e) {
    down = e;
  }
  check(() => assert.ok(down instanceof PlatformError && down.code === "UNAVAILABLE", String(down)));
}
const ac = new AbortController();
ac.abort();
let aborted;
try {
  await admin.tenants.getTenant({ tenantId }, { signal: ac.signal });
} catch (e) {
  aborted = e;
}
check(() => assert.ok(aborted instanceof ConnectError && !(aborted instanceof PlatformError) && aborted.code === 1, String(aborted)));

console.log(JSON.stringify({ checks }));
