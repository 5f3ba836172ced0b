// The console's one door to the TypeScript SDK: its sources are bundled straight from sdk/ts/src
// (no separate SDK build), with the protovalidate schema that reads every violation of a refusal.
export {
  createComputeClient,
  isPlatformError,
  toPlatformError,
  PlatformError,
} from "../../sdk/ts/src/index.js";
export type { ComputeClient } from "../../sdk/ts/src/index.js";
export { LoadBalancerNetwork, LoadBalancerNetworkStack, LoadBalancerTlsCipherPolicy } from "../../sdk/ts/src/index.js";
export type {
  Event,
  LoadBalancer,
  Pool,
  UsageRecord,
} from "../../sdk/ts/src/index.js";
export { maskedUpdate } from "../../sdk/ts/src/update.js";
export { ViolationsSchema } from "../../sdk/ts/src/gen/buf/validate/validate_pb.js";
export type { Violation } from "../../sdk/ts/src/gen/buf/validate/validate_pb.js";
