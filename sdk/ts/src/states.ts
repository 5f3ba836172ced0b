// The states resources report, as string literal unions (the messages carry them as strings).

/** The states of a load balancer: create answers pending, update updating, delete deleting. */
export const LOAD_BALANCER_STATES = ["pending", "updating", "ready", "error", "deleting", "deleted"] as const;
/** LoadBalancerState is LoadBalancer.state. */
export type LoadBalancerState = (typeof LOAD_BALANCER_STATES)[number];

/** The states of a substrate (a pool's cluster). */
export const SUBSTRATE_STATES = ["pending", "provisioning", "ready", "error", "deleting", "deleted"] as const;
/** SubstrateState is Substrate.state. */
export type SubstrateState = (typeof SUBSTRATE_STATES)[number];

/** The states of an instance (a provider machine). */
export const INSTANCE_STATES = ["pending", "running", "error", "deleting", "deleted"] as const;
/** InstanceState is Instance.state. */
export type InstanceState = (typeof INSTANCE_STATES)[number];

/** The provision states of a bare-metal machine (metal.proto's state table). */
export const NODE_STATES = [
  "enrolled",
  "inspecting",
  "inspected",
  "inspect-failed",
  "commissioning",
  "ready",
  "commission-failed",
  "deploying",
  "deployed",
  "deploy-failed",
  "rescuing",
  "rescue",
  "rescue-failed",
  "unrescuing",
  "unrescue-failed",
  "releasing",
  "release-failed",
  "retired",
] as const;
/** NodeState is MetalNode.state. */
export type NodeState = (typeof NODE_STATES)[number];

/** loadBalancerState reads a load balancer's state, typed (undefined for a state this SDK does not know). */
export function loadBalancerState(lb: { state: string }): LoadBalancerState | undefined {
  return (LOAD_BALANCER_STATES as readonly string[]).includes(lb.state) ? (lb.state as LoadBalancerState) : undefined;
}
