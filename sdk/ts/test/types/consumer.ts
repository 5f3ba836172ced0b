// Compiled (never run) by `npm test` with NodeNext resolution, as a consumer's project would: it
// fails the run when the published declarations stop resolving or the API's types regress.
import {
  createComputeClient,
  isPlatformError,
  PlatformError,
  type ComputeClient,
  type CreateLoadBalancerRequest,
  type PlatformErrorCode,
  loadBalancerState,
  waitForLoadBalancer,
  watchEvents,
  type InstanceState,
  type LoadBalancerState,
  type NodeState,
  type SubstrateState,
} from "@better-compute/sdk";
import { createNodeComputeClient } from "@better-compute/sdk/node";

const browserish: ComputeClient = createComputeClient({ baseUrl: "http://127.0.0.1:1", token: "t" });
const grpcWeb: ComputeClient = createComputeClient({
  baseUrl: "http://127.0.0.1:1",
  token: async () => "rotated",
  transport: "grpc-web",
});
const node: ComputeClient = createNodeComputeClient({ baseUrl: "http://127.0.0.1:1", token: "t", transport: "grpc" });

// @ts-expect-error -- only "connect" and "grpc-web" travel over fetch.
createComputeClient({ baseUrl: "http://127.0.0.1:1", token: "t", transport: "grpc" });

export async function consumer(): Promise<string | undefined> {
  const name: CreateLoadBalancerRequest["name"] = "web";
  try {
    const { loadBalancer } = await browserish.loadBalancers.createLoadBalancer({
      tenantId: "t1",
      name,
      targets: { pool: true },
      forwarding: [{ entryProtocol: "http", entryPort: 80, targetProtocol: "http", targetPort: 8080 }],
    });
    const state: string | undefined = loadBalancer?.state;
    await grpcWeb.pools.setQuota({ tenantId: "t1", resource: "loadBalancers", limit: 5n });
    for await (const event of node.events.watchEvents({})) {
      void event;
    }
    return state;
  } catch (err) {
    if (err instanceof PlatformError) {
      const code: PlatformErrorCode = err.code;
      const field: string | undefined = err.field;
      return `${code} ${field ?? ""} ${err.stateReason ?? ""}`;
    }
    if (isPlatformError(err, "INVALID_STATE")) return err.stateReason;
    // @ts-expect-error -- not a platform error code.
    isPlatformError(err, "NOT_A_CODE");
    throw err;
  }
}

// The helpers: typed states, the waiter, the resumable watch and the retry option.
export async function helpers(): Promise<LoadBalancerState | undefined> {
  const retrying: ComputeClient = createComputeClient({ baseUrl: "http://127.0.0.1:1", token: "t", retry: { maxAttempts: 3 }, defaultTimeoutMs: 5000 });
  const lb = await waitForLoadBalancer(retrying, "t1", "plb_x", { until: ["ready", "error"], timeoutMs: 60_000 });
  // @ts-expect-error -- "active" is no load balancer state.
  await waitForLoadBalancer(retrying, "t1", "plb_x", { until: ["active"] });
  const w = watchEvents(retrying, { tenantId: "t1", resourceId: lb.id, types: ["providerLoadBalancer.ready"] });
  for await (const ev of w) {
    const cursor: bigint = w.cursor;
    void [ev.type, cursor];
  }
  const s: SubstrateState = "provisioning";
  const i: InstanceState = "running";
  const n: NodeState = "deploy-failed";
  void [s, i, n];
  return loadBalancerState(lb);
}
