// Package lifecycle holds what the seed says happens when a resource moves through its life, in
// one table per kind: which quota a create books on its pool (and deleted gives back), which
// meter ready starts and deleted stops, and which event each transition publishes with which
// data. Both sides call it: core when a request records a transition (create, update, delete,
// a metal verb), the reconcilers' writers when the provider's answer does (ready, error,
// deleted). A caller decides when a write is a transition (a row that was not ready before and
// is now); what the transition does is decided here, in the caller's transaction.
package lifecycle

import (
	"context"
	"errors"
	"fmt"

	"better-compute.dev/compute/ids"
	"better-compute.dev/compute/store"
)

// Transition is a step of a resource's life.
type Transition string

// The transitions. Requests record Create, Update, Delete and the metal verbs; reconcilers
// record Ready, Error and Deleted (and a metal workflow's Move).
const (
	Create      Transition = "create"      // a request recorded it (pending)
	Update      Transition = "update"      // its settings or what it reaches changed
	Ready       Transition = "ready"       // the provider holds it as asked (first time, or again)
	Error       Transition = "error"       // the provider refused it
	Delete      Transition = "delete"      // a request marked it deleting
	Deleted     Transition = "deleted"     // the provider's copy is gone
	Enroll      Transition = "enroll"      // a metal node was enrolled by its BMC
	Move        Transition = "move"        // a metal node moved in the provision state table
	Credentials Transition = "credentials" // a metal node's BMC credentials were replaced
)

// Quota resources a create books on its pool.
const (
	QuotaLoadBalancers = "loadBalancers"
	QuotaInstances     = "instances"
)

// Meters of usage_records.
const (
	// MeterLoadBalancerHours bills a load balancer from ready until deleted.
	MeterLoadBalancerHours = "vps.load-balancer.hours"
)

// Event types.
const (
	EventLBCreated = "providerLoadBalancer.created"
	EventLBReady   = "providerLoadBalancer.ready"
	EventLBError   = "providerLoadBalancer.error"
	EventLBUpdated = "providerLoadBalancer.updated"
	EventLBDeleted = "providerLoadBalancer.deleted"

	// The pool's policy named a substrate (first time, or again after a teardown).
	EventSubstrateCreated = "poolSubstrate.created"
	// The cluster is running, its node pools match the flavors and bcd's DaemonSet is applied.
	EventSubstrateReady = "poolSubstrate.ready"
	// The substrate is in error (data.error says why).
	EventSubstrateError = "poolSubstrate.error"
	// While ready, the cluster or its node pools changed (a resize, a flavor added or removed).
	EventSubstrateUpdated = "poolSubstrate.updated"
	// The teardown finished: what the substrate made is gone.
	EventSubstrateDeleted = "poolSubstrate.deleted"

	// A substrate's node pool (one bc-<pool>-<flavor> per flavor); the resource is the
	// substrate, so following the substrate follows its node pools too.
	//
	// The node pool was made on the cluster (or found there by name) and recorded.
	EventSubstrateNodePoolCreated = "poolSubstrate.nodePool.created"
	// Every node of the node pool is running (after it was made or resized).
	EventSubstrateNodePoolReady = "poolSubstrate.nodePool.ready"
	// The provider refused to make or resize the node pool (data.error says why); the
	// substrate is in error with the same reason.
	EventSubstrateNodePoolError = "poolSubstrate.nodePool.error"
	// The node pool's count, size or provider id changed (a resize, or made again at a new size).
	EventSubstrateNodePoolUpdated = "poolSubstrate.nodePool.updated"
	// The node pool is gone: no flavor wants it any more, or the substrate was torn down.
	EventSubstrateNodePoolDeleted = "poolSubstrate.nodePool.deleted"

	// A metal node's events; none carries a credential: their data names states, verbs and
	// the BMC's address only.
	EventMetalEnrolled           = "metalNode.enrolled"
	EventMetalMoved              = "metalNode.moved"
	EventMetalCredentialsUpdated = "metalNode.credentialsUpdated"
)

// Rule is what one transition of a kind does, all in the transaction that records it.
type Rule struct {
	Books   string   // the quota resource of which one unit is booked on the pool ("" none)
	Refunds string   // the quota resource of which one unit is given back
	Starts  string   // the meter whose interval opens (once per resource)
	Stops   string   // the meter whose open interval closes
	Event   string   // the event type published ("" none)
	Data    []string // keys the event's data must carry
}

// Kind is one kind of resource and its rules by transition. A transition missing from Rules is
// not one the kind has: recording it is an error.
type Kind struct {
	Name  string
	Rules map[Transition]Rule
}

// The kinds and their rules. The comments quote what the seed (or, where the seed says nothing,
// the package that owns the kind) states; lifecycle_test checks each row against them.
var (
	// LoadBalancer: "A load balancer books one loadBalancers quota on the pool (no quota row
	// grants none) and bills vps.load-balancer.hours from ready until deleted." create "returns
	// pending, booking one loadBalancers ... Publishes providerLoadBalancer.created, then
	// providerLoadBalancer.ready with its address, or providerLoadBalancer.error"; update
	// "publishes providerLoadBalancer.updated with what changed"; delete "returns it deleting;
	// the reconciler deletes it at the provider, refunds its quota and publishes
	// providerLoadBalancer.deleted".
	LoadBalancer = &Kind{Name: "loadBalancer", Rules: map[Transition]Rule{
		Create:  {Books: QuotaLoadBalancers, Event: EventLBCreated},
		Update:  {Event: EventLBUpdated, Data: []string{"changed"}},
		Ready:   {Starts: MeterLoadBalancerHours, Event: EventLBReady, Data: []string{"address"}},
		Error:   {Event: EventLBError, Data: []string{"error"}},
		Delete:  {},
		Deleted: {Refunds: QuotaLoadBalancers, Stops: MeterLoadBalancerHours, Event: EventLBDeleted},
	}}

	// Instance books one instances quota on its pool, given back once deleted; it is neither
	// metered nor evented.
	Instance = &Kind{Name: "instance", Rules: map[Transition]Rule{
		Create:  {Books: QuotaInstances},
		Delete:  {},
		Deleted: {Refunds: QuotaInstances},
	}}

	// Substrate: "There is nothing to call to create or delete a substrate: change the pool's
	// policy, or archive the pool to tear it down." No quota, no meter; its events name the pool
	// (docs/substrates.md).
	Substrate = &Kind{Name: "poolSubstrate", Rules: map[Transition]Rule{
		Create:  {Event: EventSubstrateCreated, Data: []string{"poolId"}},
		Ready:   {Event: EventSubstrateReady, Data: []string{"poolId", "clusterId"}},
		Update:  {Event: EventSubstrateUpdated, Data: []string{"poolId", "clusterId"}},
		Error:   {Event: EventSubstrateError, Data: []string{"poolId", "error"}},
		Deleted: {Event: EventSubstrateDeleted, Data: []string{"poolId"}},
	}}

	// SubstrateNodePool: a substrate's node pool, evented on the substrate's resource id
	// (docs/substrates.md); no quota, no meter.
	SubstrateNodePool = &Kind{Name: "poolSubstrate.nodePool", Rules: map[Transition]Rule{
		Create:  {Event: EventSubstrateNodePoolCreated, Data: []string{"poolId", "clusterId", "nodePool"}},
		Ready:   {Event: EventSubstrateNodePoolReady, Data: []string{"poolId", "clusterId", "nodePool"}},
		Update:  {Event: EventSubstrateNodePoolUpdated, Data: []string{"poolId", "clusterId", "nodePool"}},
		Error:   {Event: EventSubstrateNodePoolError, Data: []string{"poolId", "clusterId", "nodePool"}},
		Deleted: {Event: EventSubstrateNodePoolDeleted, Data: []string{"poolId", "clusterId", "nodePool"}},
	}}

	// MetalNode: "Each verb checks the move against the provision state table, records it in
	// one transaction and queues the metal reconciler." No quota, no meter; the verbs and the
	// workflows' outcomes publish metalNode.moved naming the states (docs/metal.md).
	MetalNode = &Kind{Name: "metalNode", Rules: map[Transition]Rule{
		Enroll:      {Event: EventMetalEnrolled},
		Move:        {Event: EventMetalMoved, Data: []string{"from", "to"}},
		Credentials: {Event: EventMetalCredentialsUpdated},
	}}

	// Kinds lists every kind.
	Kinds = []*Kind{LoadBalancer, Instance, Substrate, SubstrateNodePool, MetalNode}
)

// Subject is the resource a transition happens to.
type Subject struct {
	TenantID string
	PoolID   string // the pool whose quota it books ("" for kinds that book none)
	ID       string
}

// ErrNoQuota is a booking refused: no room, or no quota row.
var ErrNoQuota = errors.New("lifecycle: no quota left")

// Rule returns the rule of t; ok is false when the kind has no such transition.
func (k *Kind) Rule(t Transition) (Rule, bool) {
	r, ok := k.Rules[t]
	return r, ok
}

// Quota is the quota resource a create of the kind books ("" none).
func (k *Kind) Quota() string { return k.Rules[Create].Books }

// TransitionOf is the transition that publishes an event type of the kind.
func (k *Kind) TransitionOf(eventType string) (Transition, bool) {
	for t, r := range k.Rules {
		if r.Event != "" && r.Event == eventType {
			return t, true
		}
	}
	return "", false
}

func (k *Kind) rule(t Transition, data map[string]any) (Rule, error) {
	r, ok := k.Rules[t]
	if !ok {
		return r, fmt.Errorf("lifecycle: a %s has no transition %q", k.Name, t)
	}
	for _, key := range r.Data {
		if _, ok := data[key]; !ok && r.Event != "" {
			return r, fmt.Errorf("lifecycle: %s of %s: the event's data lacks %q", t, k.Name, key)
		}
	}
	return r, nil
}

// Apply does what t does to s in the caller's transaction q, in this order: the booking
// (ErrNoQuota when refused, before anything else is written), the refund, the meter stopped,
// the meter started, the event with data.
func (k *Kind) Apply(ctx context.Context, q store.Querier, t Transition, s Subject, data map[string]any) error {
	r, err := k.rule(t, data)
	if err != nil {
		return err
	}
	if r.Books != "" {
		booked, err := store.BookQuota(ctx, q, s.PoolID, s.TenantID, r.Books)
		if err != nil {
			return err
		}
		if !booked {
			return ErrNoQuota
		}
	}
	if r.Refunds != "" {
		if err := store.RefundQuota(ctx, q, s.PoolID, s.TenantID, r.Refunds); err != nil {
			return err
		}
	}
	if r.Stops != "" {
		if err := store.StopUsage(ctx, q, r.Stops, s.ID); err != nil {
			return err
		}
	}
	if r.Starts != "" {
		if err := store.StartUsage(ctx, q, store.UsageRecord{
			ID: ids.New(ids.UsageRecord), TenantID: s.TenantID, Meter: r.Starts, ResourceID: s.ID,
		}); err != nil {
			return err
		}
	}
	if r.Event == "" {
		return nil
	}
	_, err = store.AppendEvent(ctx, q, event(r, s, data))
	return err
}

// Book queues the booking of a create among its locked transaction's reads
// (store.Reads.BookQuota); the transaction's writes then go through Queue, and Take last.
func (k *Kind) Book(rd *store.Reads, s Subject, out *store.QuotaBooking) {
	rd.BookQuota(s.PoolID, s.TenantID, k.Quota(), out)
}

// Take queues the taking of the unit Book saw free as the transaction's last write
// (store.Writes.TakeQuota), where the engine books in two steps.
func (k *Kind) Take(w *store.Writes, b *store.QuotaBooking) { w.TakeQuota(b) }

// Queue is Apply for a transaction's last writes (store.Writes), whose booking, if any, was
// made by Book (and is taken by Take), in Apply's order: the meter stopped, the meter started,
// the event. A transition that refunds is not queued this way (a refund's answer is checked).
func (k *Kind) Queue(w *store.Writes, t Transition, s Subject, data map[string]any) error {
	r, err := k.rule(t, data)
	if err != nil {
		return err
	}
	if r.Refunds != "" {
		return fmt.Errorf("lifecycle: %s of %s refunds: Apply it in its transaction", t, k.Name)
	}
	if r.Stops != "" {
		w.StopUsage(r.Stops, s.ID)
	}
	if r.Starts != "" {
		w.StartUsage(store.UsageRecord{ID: ids.New(ids.UsageRecord), TenantID: s.TenantID, Meter: r.Starts, ResourceID: s.ID})
	}
	if r.Event == "" {
		return nil
	}
	return w.AppendEvent(event(r, s, data))
}

func event(r Rule, s Subject, data map[string]any) store.Event {
	return store.Event{TenantID: s.TenantID, ID: ids.New(ids.Event), Type: r.Event, ResourceID: s.ID, Data: data}
}
