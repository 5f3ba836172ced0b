package vps

import (
	"bytes"
	"slices"

	"better-compute.dev/compute/contract"
	"better-compute.dev/compute/lifecycle"
	"better-compute.dev/compute/provider"
	"better-compute.dev/compute/redact"
	"better-compute.dev/compute/store"
)

// The fenced writes of a load balancer pass. Each re-reads the row under a lock and compares
// it with the row the pass started from: a request that changed it meanwhile (a new spec, a
// delete) bumped spec_version and queued the load balancer again, so the write keeps the
// request's state and records only what the provider now holds.

// current locks and reads the row and tells whether a request changed it since the pass read.
func (w *writer) currentLB(read store.LoadBalancer) (store.LoadBalancer, bool, error) {
	cur, err := store.GetLoadBalancerForUpdate(w.ctx, w.tx, read.ID)
	if err != nil {
		return cur, false, err
	}
	return cur, changed(read, cur), nil
}

// changed tells whether a request changed the row since the pass read it.
func changed(read, cur store.LoadBalancer) bool {
	return cur.SpecVersion != read.SpecVersion || cur.State != read.State
}

// observation is the row as it stands, for RecordLoadBalancerObservation to write back with
// some fields changed.
func observation(cur store.LoadBalancer) store.LoadBalancerObservation {
	return store.LoadBalancerObservation{
		ID: cur.ID, State: cur.State, ProviderID: cur.ProviderID, Address: cur.Address, AddressV6: cur.AddressV6,
		AppliedVersion: cur.AppliedVersion, ReachedInstanceIDs: cur.ReachedInstanceIDs,
		ReachedMachineIDs: cur.ReachedMachineIDs, LastError: cur.LastError, ObservedDigest: cur.ObservedDigest,
	}
}

// markCreatePending is the durable mark written before the provider is asked to create.
func (w *writer) markCreatePending(read store.LoadBalancer) error {
	_, changed, err := w.currentLB(read)
	if err != nil {
		return err
	}
	if changed {
		return errRowChanged
	}
	return store.MarkLoadBalancerCreatePending(w.ctx, w.tx, read.ID)
}

// forgetLB drops a provider id the provider no longer knows, so the next pass creates anew. It
// queues that pass itself: the pass that forgets ends without a result (its row changed), and
// nothing else would queue the load balancer, now updating, before the periodic pass (the
// work-queue invariant, store/workqueue_unqueued.go). The enqueue moves the item's generation, so the
// runner's completion of this pass keeps it due.
func (w *writer) forgetLB(read store.LoadBalancer) error {
	cur, _, err := w.currentLB(read)
	if err != nil || cur.ProviderID != read.ProviderID {
		return err
	}
	o := observation(cur)
	o.ProviderID, o.Address, o.AddressV6, o.AppliedVersion, o.ObservedDigest = "", "", "", 0, nil
	if cur.State == "ready" || cur.State == "error" {
		o.State = "updating"
	}
	if _, err = store.RecordLoadBalancerObservation(w.ctx, w.tx, o); err != nil {
		return err
	}
	return w.enqueue(cur.ID)
}

// observeLB records what the provider holds: its id, addresses, the applied version and what
// it reaches; with ready it also moves the row to ready, publishing providerLoadBalancer.ready
// and opening the usage when it was not ready before. putBack, the parts someone else had
// changed at the provider and this pass's update put back, sets last_drift_at and publishes
// providerLoadBalancer.drifted naming them, in the same transaction. It queues the writes
// behind the lease check and the row's lock (writeLB), the events last (store/lockorder.go).
func observeLB(read, cur store.LoadBalancer, w *store.Writes, obs *provider.LoadBalancer, want desiredLB, applied int64, ready bool, globals []string, putBack []string) error {
	o := observation(cur)
	o.ProviderID = obs.ID
	if obs.Address != "" {
		o.Address, o.AddressV6 = obs.Address, obs.AddressV6
	}
	deleting := cur.State == "deleting" || cur.State == "deleted"
	if !deleting && !changed(read, cur) {
		o.AppliedVersion = max(o.AppliedVersion, applied)
		o.ReachedInstanceIDs, o.ReachedMachineIDs = want.instanceIDs, want.spec.MachineIDs
		o.LastError = ""
		if ready {
			// What the provider showed of it converged: the periodic pass queues it again only
			// when a list shows something else (lbsOutOfStep).
			o.State, o.MarkReady, o.ObservedDigest = "ready", true, listedDigest(obs)
		}
	}
	// The repair happened at the provider whatever a request changed meanwhile; a load
	// balancer being deleted has nothing left to tell its tenant about.
	o.MarkDrifted = len(putBack) > 0 && !deleting
	if !o.MarkDrifted && sameObservation(cur, o) {
		return nil
	}
	w.RecordLoadBalancerObservation(o)
	if cur.ProviderID == "" && cur.Scope == string(provider.ScopeRegional) {
		// Global load balancers that target this one waited for its provider id.
		for _, id := range globals {
			w.Enqueue(contract.VPSKind, id, nil)
		}
	}
	subject := lifecycle.Subject{TenantID: cur.TenantID, PoolID: cur.PoolID, ID: cur.ID}
	if o.State == "ready" && cur.State != "ready" {
		if err := lifecycle.LoadBalancer.Queue(w, lifecycle.Ready, subject,
			map[string]any{"address": o.Address, "addressV6": o.AddressV6}); err != nil {
			return err
		}
	}
	if !o.MarkDrifted {
		return nil
	}
	parts := make([]any, 0, len(putBack))
	for _, p := range putBack {
		parts = append(parts, p)
	}
	return lifecycle.LoadBalancer.Queue(w, lifecycle.Drifted, subject, map[string]any{"parts": parts})
}

// sameObservation reports whether writing o would change nothing (steady periodic passes then
// write nothing at all).
func sameObservation(cur store.LoadBalancer, o store.LoadBalancerObservation) bool {
	return cur.State == o.State && cur.ProviderID == o.ProviderID && cur.Address == o.Address &&
		cur.AddressV6 == o.AddressV6 && cur.AppliedVersion >= o.AppliedVersion && cur.LastError == o.LastError &&
		slices.Equal(cur.ReachedInstanceIDs, o.ReachedInstanceIDs) && slices.Equal(cur.ReachedMachineIDs, o.ReachedMachineIDs) &&
		(!o.MarkReady || cur.ReadyAt != nil) && cur.CreatePendingAt == nil && bytes.Equal(cur.ObservedDigest, o.ObservedDigest)
}

// errorLB puts the load balancer in error and publishes providerLoadBalancer.error, once per
// distinct failure.
func (w *writer) errorLB(read store.LoadBalancer, obs *provider.LoadBalancer, msg string) error {
	// The provider scrubbed its own request's secrets; these patterns catch any other.
	msg = redact.Patterns(msg)
	cur, changed, err := w.currentLB(read)
	if err != nil {
		return err
	}
	if changed || cur.State == "deleting" || cur.State == "deleted" {
		return errRowChanged
	}
	if cur.State == "error" && cur.LastError == msg && (obs == nil || cur.ProviderID == obs.ID) {
		return nil
	}
	o := observation(cur)
	o.State, o.LastError = "error", msg
	if obs != nil {
		o.ProviderID = obs.ID
	}
	if _, err := store.RecordLoadBalancerObservation(w.ctx, w.tx, o); err != nil {
		return err
	}
	return w.lb(lifecycle.Error, cur, map[string]any{"error": msg})
}

// lbLastError shows a retryable failure on the row without changing its state.
func (w *writer) lbLastError(read store.LoadBalancer, msg string) error {
	msg = redact.Patterns(msg)
	cur, _, err := w.currentLB(read)
	if err != nil || cur.LastError == msg || cur.State == "deleted" {
		return err
	}
	return store.SetLoadBalancerError(w.ctx, w.tx, cur.ID, cur.State, msg)
}

// deletedLB records the load balancer deleted, closes its usage, refunds its quota and
// publishes providerLoadBalancer.deleted: once, since only a deleting row moves to deleted.
func (w *writer) deletedLB(read store.LoadBalancer) error {
	cur, _, err := w.currentLB(read)
	if err != nil {
		return err
	}
	if cur.State != "deleting" {
		return errRowChanged
	}
	o := observation(cur)
	o.State, o.LastError, o.MarkDeleted = "deleted", "", true
	o.ReachedInstanceIDs, o.ReachedMachineIDs = nil, nil
	if _, err := store.RecordLoadBalancerObservation(w.ctx, w.tx, o); err != nil {
		return err
	}
	return w.lb(lifecycle.Deleted, cur, map[string]any{"name": cur.Name})
}
