package sdk

import v1 "better-compute.dev/compute/gen/go/bettercompute/compute/v1"

// LoadBalancerState is the state of a load balancer, as LoadBalancer.state carries it.
type LoadBalancerState string

// The states of a load balancer. Create answers pending, update updating, delete deleting; the
// reconcilers move it on to ready, error or deleted.
const (
	LoadBalancerPending  LoadBalancerState = "pending"
	LoadBalancerUpdating LoadBalancerState = "updating"
	LoadBalancerReady    LoadBalancerState = "ready"
	LoadBalancerError    LoadBalancerState = "error"
	LoadBalancerDeleting LoadBalancerState = "deleting"
	LoadBalancerDeleted  LoadBalancerState = "deleted"
)

// LoadBalancerStateOf is lb's state, typed.
func LoadBalancerStateOf(lb *v1.LoadBalancer) LoadBalancerState {
	return LoadBalancerState(lb.GetState())
}

// Settled reports whether the reconcilers are done with the load balancer for now: ready, error
// or deleted.
func (s LoadBalancerState) Settled() bool {
	return s == LoadBalancerReady || s == LoadBalancerError || s == LoadBalancerDeleted
}

// SubstrateState is the state of a substrate (a pool's cluster), as Substrate.state carries it.
type SubstrateState string

// The states of a substrate.
const (
	SubstratePending      SubstrateState = "pending"
	SubstrateProvisioning SubstrateState = "provisioning"
	SubstrateReady        SubstrateState = "ready"
	SubstrateError        SubstrateState = "error"
	SubstrateDeleting     SubstrateState = "deleting"
	SubstrateDeleted      SubstrateState = "deleted"
)

// SubstrateStateOf is s's state, typed.
func SubstrateStateOf(s *v1.Substrate) SubstrateState { return SubstrateState(s.GetState()) }

// InstanceState is the state of an instance (a provider machine), as Instance.state carries it.
type InstanceState string

// The states of an instance.
const (
	InstancePending  InstanceState = "pending"
	InstanceRunning  InstanceState = "running"
	InstanceError    InstanceState = "error"
	InstanceDeleting InstanceState = "deleting"
	InstanceDeleted  InstanceState = "deleted"
)

// InstanceStateOf is in's state, typed.
func InstanceStateOf(in *v1.Instance) InstanceState { return InstanceState(in.GetState()) }

// NodeState is the provision state of a bare-metal machine, as MetalNode.state carries it.
type NodeState string

// The provision states of a bare-metal machine (metal.proto's state table).
const (
	NodeEnrolled         NodeState = "enrolled"
	NodeInspecting       NodeState = "inspecting"
	NodeInspected        NodeState = "inspected"
	NodeInspectFailed    NodeState = "inspect-failed"
	NodeCommissioning    NodeState = "commissioning"
	NodeReady            NodeState = "ready"
	NodeCommissionFailed NodeState = "commission-failed"
	NodeDeploying        NodeState = "deploying"
	NodeDeployed         NodeState = "deployed"
	NodeDeployFailed     NodeState = "deploy-failed"
	NodeRescuing         NodeState = "rescuing"
	NodeRescue           NodeState = "rescue"
	NodeRescueFailed     NodeState = "rescue-failed"
	NodeUnrescuing       NodeState = "unrescuing"
	NodeUnrescueFailed   NodeState = "unrescue-failed"
	NodeReleasing        NodeState = "releasing"
	NodeReleaseFailed    NodeState = "release-failed"
	NodeRetired          NodeState = "retired"
)

// NodeStateOf is n's provision state, typed.
func NodeStateOf(n *v1.MetalNode) NodeState { return NodeState(n.GetState()) }
