// Load balancer updates with explicit presence: the parts a request names are the parts the
// server replaces, so a part named but left empty is cleared.

import { create } from "@bufbuild/protobuf";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { FieldMaskSchema } from "@bufbuild/protobuf/wkt";
import type { Client } from "@connectrpc/connect";
import { LoadBalancerService, UpdateLoadBalancerRequestSchema } from "./gen/bettercompute/compute/v1/load_balancers_pb.js";
import type { LoadBalancer, UpdateLoadBalancerRequest } from "./gen/bettercompute/compute/v1/load_balancers_pb.js";
import { isPlatformError } from "./errors.js";

/** The parts of a load balancer an update replaces, by their request property. */
export const LOAD_BALANCER_PARTS = {
  targets: "targets",
  forwarding: "forwarding",
  healthCheck: "health_check",
  stickySessions: "sticky_sessions",
  sourceRanges: "source_ranges",
  redirectHttpToHttps: "redirect_http_to_https",
  domains: "domains",
  deletionProtection: "deletion_protection",
  // The provider settings (docs/loadbalancer-settings.md): one named but unset returns to the
  // provider's default; network, networkStack and labels are fixed at create.
  sizeUnit: "size_unit",
  httpIdleTimeoutSeconds: "http_idle_timeout_seconds",
  enableProxyProtocol: "enable_proxy_protocol",
  enableBackendKeepalive: "enable_backend_keepalive",
  network: "network",
  networkStack: "network_stack",
  tlsCipherPolicy: "tls_cipher_policy",
  disableLetsEncryptDnsRecords: "disable_lets_encrypt_dns_records",
  labels: "labels",
} as const;

/** LoadBalancerPart names one part of a load balancer an update replaces. */
export type LoadBalancerPart = keyof typeof LOAD_BALANCER_PARTS;

/**
 * maskedUpdate builds an UpdateLoadBalancerRequest whose updateMask lists every part the init
 * object has as an own property (even `domains: []` or `healthCheck: undefined`), plus the parts
 * named in `clear`. The server replaces exactly those: `maskedUpdate({ tenantId, loadBalancerId,
 * domains: [] }, "healthCheck")` empties the domains and removes the health check. An init with no
 * part and nothing to clear changes nothing.
 */
export function maskedUpdate(
  init: MessageInitShape<typeof UpdateLoadBalancerRequestSchema>,
  ...clear: LoadBalancerPart[]
): UpdateLoadBalancerRequest {
  const paths: string[] = [];
  for (const [prop, path] of Object.entries(LOAD_BALANCER_PARTS) as [LoadBalancerPart, string][]) {
    if (Object.prototype.hasOwnProperty.call(init, prop) || clear.includes(prop)) {
      paths.push(path);
    }
  }
  const req = create(UpdateLoadBalancerRequestSchema, init);
  req.updateMask = create(FieldMaskSchema, { paths });
  return req;
}

/** How often modifyLoadBalancer reads again after another writer won. */
export const MODIFY_ATTEMPTS = 5;

/** The parts a modifyLoadBalancer change sets: an update without its identity and etag. */
export type LoadBalancerChange = Omit<
  MessageInitShape<typeof UpdateLoadBalancerRequestSchema>,
  "tenantId" | "loadBalancerId" | "etag" | "$typeName"
>;

/**
 * modifyLoadBalancer is a read-modify-write that never overwrites a change it did not see: it
 * reads the load balancer, asks `change` for the parts to replace given what it read (as
 * maskedUpdate: the parts present are the parts replaced), and sends them with the etag of that
 * read. When another writer changed the load balancer in between (INVALID_STATE etagMismatch) it
 * reads again and asks `change` again, up to MODIFY_ATTEMPTS reads; any other error ends it.
 */
export async function modifyLoadBalancer(
  client: Client<typeof LoadBalancerService>,
  tenantId: string,
  loadBalancerId: string,
  change: (current: LoadBalancer) => LoadBalancerChange | Promise<LoadBalancerChange>,
): Promise<LoadBalancer> {
  let last: unknown;
  for (let attempt = 0; attempt < MODIFY_ATTEMPTS; attempt++) {
    const { loadBalancer: current } = await client.getLoadBalancer({ tenantId, loadBalancerId });
    if (!current) {
      throw new Error(`load balancer ${loadBalancerId}: the get answered no load balancer`);
    }
    const parts = await change(current);
    const req = maskedUpdate({ ...parts, tenantId, loadBalancerId, etag: current.etag });
    try {
      const { loadBalancer } = await client.updateLoadBalancer(req);
      if (!loadBalancer) {
        throw new Error(`load balancer ${loadBalancerId}: the update answered no load balancer`);
      }
      return loadBalancer;
    } catch (err) {
      if (!(isPlatformError(err, "INVALID_STATE") && err.stateReason === "etagMismatch")) {
        throw err;
      }
      last = err;
    }
  }
  throw last;
}
