// Package contract is what the API (core) and the reconcilers agree on, so that neither imports
// the other: the work kinds core queues and the reconcilers serve, how a load balancer's desired
// settings are stored (core writes them, reconcile/vps reads them) and the data of a substrate's
// events (core publishes created on a policy change, reconcile/substrates the rest). The event
// types themselves, with the quota and meter names, are package lifecycle's: a transition's rule
// names them there, and both sides apply it.
package contract

import "better-compute.dev/compute/store"

// Work kinds: the queue names of the reconcilers. A change to one strands the items already
// queued under the old name, so they are fixed for good.
const (
	// VPSKind is served by reconcile/vps; its resource ids carry their type prefix (plb_,
	// inst_, snet_, pcert_).
	VPSKind = "vps.provider-resources"
	// SubstrateKind is served by reconcile/substrates; its resource ids are pool ids.
	SubstrateKind = "kubernetes.substrates"
	// MetalKind is served by reconcile/metal; its resource ids are node ids and its fairness
	// group is the node's tenant (store.EnqueueGroup), so a runner's per-tenant bound keeps one
	// tenant's hung BMCs from holding every metal slot.
	MetalKind = "metal.nodes"
)

// WorkKinds are the work kinds provider-side resources are queued under, for the work-queue
// invariant's queries (store/workqueue_unqueued.go).
var WorkKinds = store.WorkKinds{VPS: VPSKind, Substrate: SubstrateKind}
