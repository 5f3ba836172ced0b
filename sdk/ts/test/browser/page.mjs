// The browser side of browser.test.mjs, bundled with esbuild: imports the SDK as an application
// would and calls the server from the page's own origin (so through CORS), over connect-web.
import { createComputeClient, PlatformError } from "../../dist/index.js";

// runScenario makes a load balancer over Connect, reads it back over gRPC-Web, and tries a bad
// name; it writes what it saw into #result (the test reads it from there) and returns it too.
async function runScenario({ baseUrl, token, tenantId, poolId, region, name, idempotencyKey }) {
  const result = { ok: false };
  try {
    const connect = createComputeClient({ baseUrl, token });
    const grpcWeb = createComputeClient({ baseUrl, token, transport: "grpc-web" });
    const request = {
      tenantId,
      poolId,
      name,
      scope: "regional",
      region,
      targets: { pool: true },
      forwarding: [{ entryProtocol: "http", entryPort: 80, targetProtocol: "http", targetPort: 8080 }],
      idempotencyKey,
    };
    const { loadBalancer: created } = await connect.loadBalancers.createLoadBalancer(request);
    result.created = { id: created.id, name: created.name, state: created.state, tenantId: created.tenantId };
    const { loadBalancer: got } = await grpcWeb.loadBalancers.getLoadBalancer({ tenantId, loadBalancerId: created.id });
    result.got = { id: got.id, name: got.name, poolId: got.poolId, pool: got.targets?.pool ?? null };
    const { loadBalancers } = await connect.loadBalancers.listLoadBalancers({ tenantId });
    result.listed = loadBalancers.map((lb) => lb.id);
    result.errors = {};
    for (const [label, client] of [["connect", connect], ["grpcWeb", grpcWeb]]) {
      try {
        await client.loadBalancers.createLoadBalancer({ ...request, name: "Bad_Name", idempotencyKey: `${idempotencyKey}-bad` });
        result.errors[label] = { unexpected: "the bad name was accepted" };
      } catch (err) {
        result.errors[label] = {
          isPlatformError: err instanceof PlatformError,
          code: err.code ?? null,
          field: err.field ?? null,
        };
      }
    }
    result.ok = true;
  } catch (err) {
    result.error = `${err?.name}: ${err?.message}`;
  }
  document.getElementById("result").textContent = JSON.stringify(result);
  return result;
}

window.runScenario = runScenario;
document.getElementById("status").textContent = "loaded";
