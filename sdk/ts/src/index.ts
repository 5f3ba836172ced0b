// @better-compute/sdk: typed clients for the Better Compute control plane, for browsers and Node.

export { createComputeClient, clientsFor, sdkInterceptors } from "./client.js";
export type { ComputeClient, ComputeClientOptions, WireProtocol } from "./client.js";
export { bearerAuth } from "./interceptors.js";
export { withPlatformErrors } from "./platform-client.js";
export type { TokenSource } from "./interceptors.js";
export {
  PLATFORM_ERROR_CODES,
  PLATFORM_ERROR_DOMAIN,
  REQUEST_ID_HEADER,
  PlatformError,
  isPlatformError,
  toPlatformError,
  unreachable,
  violationField,
} from "./errors.js";
export type { PlatformErrorCode, PlatformErrorOptions, Violation as PlatformViolation } from "./errors.js";
export { ErrorInfoSchema } from "./error-info.js";
export type { ErrorInfo } from "./error-info.js";
export { services } from "./services.js";
export { maskedUpdate, modifyLoadBalancer, LOAD_BALANCER_PARTS, MODIFY_ATTEMPTS } from "./update.js";
export type { LoadBalancerChange, LoadBalancerPart } from "./update.js";
export { pages } from "./pages.js";
export { retryInterceptor } from "./retry.js";
export type { RetryOptions } from "./retry.js";
export { EventWatcher, watchEvents } from "./watch.js";
export type { WatchOptions, WatchRequest } from "./watch.js";
export { waitForLoadBalancer, WaitTimeoutError, LoadBalancerFailedError } from "./wait.js";
export type { WaitOptions } from "./wait.js";
export { LOAD_BALANCER_STATES, SUBSTRATE_STATES, INSTANCE_STATES, NODE_STATES, loadBalancerState } from "./states.js";
export type { LoadBalancerState, SubstrateState, InstanceState, NodeState } from "./states.js";
// buf.validate.Violations, the detail listing every violation of an INVALID_INPUT answer (the
// whole buf.validate package is at "@better-compute/sdk/buf/validate").
export { ViolationsSchema, ViolationSchema, FieldPathSchema, FieldPathElementSchema } from "./gen/buf/validate/validate_pb.js";
export type { Violations, Violation, FieldPath, FieldPathElement } from "./gen/buf/validate/validate_pb.js";
export type { ServiceName } from "./services.js";

// The messages, enums and service descriptors, so callers can type requests and use create().
export * from "./gen/bettercompute/compute/v1/certificates_pb.js";
export * from "./gen/bettercompute/compute/v1/errors_pb.js";
export * from "./gen/bettercompute/compute/v1/events_pb.js";
export * from "./gen/bettercompute/compute/v1/instances_pb.js";
export * from "./gen/bettercompute/compute/v1/load_balancers_pb.js";
export * from "./gen/bettercompute/compute/v1/metal_pb.js";
export * from "./gen/bettercompute/compute/v1/networks_pb.js";
export * from "./gen/bettercompute/compute/v1/pools_pb.js";
export * from "./gen/bettercompute/compute/v1/substrates_pb.js";
export * from "./gen/bettercompute/compute/v1/tenancy_pb.js";
export * from "./gen/bettercompute/compute/v1/usage_pb.js";
