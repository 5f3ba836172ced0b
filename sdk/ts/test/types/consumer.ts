// Compiled (never run) by `npm test` with NodeNext resolution, as a consumer's project would: it
// fails the run when the published declarations stop resolving or the API's types regress.
import {
  createComputeClient,
  isPlatformError,
  PlatformError,
  type ComputeClient,
  type CreateLoadBalancerRequest,
  type PlatformErrorCode,
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
