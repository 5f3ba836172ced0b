// Load balancer updates with explicit presence: the parts a request names are the parts the
// server replaces, so a part named but left empty is cleared.

import { create } from "@bufbuild/protobuf";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { FieldMaskSchema } from "@bufbuild/protobuf/wkt";
import { UpdateLoadBalancerRequestSchema } from "./gen/bettercompute/compute/v1/load_balancers_pb.js";
import type { UpdateLoadBalancerRequest } from "./gen/bettercompute/compute/v1/load_balancers_pb.js";

/** The parts of a load balancer an update replaces, by their request property. */
export const LOAD_BALANCER_PARTS = {
  targets: "targets",
  forwarding: "forwarding",
  healthCheck: "health_check",
  stickySessions: "sticky_sessions",
  sourceRanges: "source_ranges",
  redirectHttpToHttps: "redirect_http_to_https",
  domains: "domains",
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
