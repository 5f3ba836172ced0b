package metal

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"google.golang.org/protobuf/encoding/protojson"

	v1 "better-compute.dev/compute/gen/go/bettercompute/compute/v1"
	"better-compute.dev/compute/lifecycle"
	"better-compute.dev/compute/metal"
	"better-compute.dev/compute/provider/bmc"
	"better-compute.dev/compute/reconcile"
	"better-compute.dev/compute/store"
)

// EventMoved is the event a reconciler outcome publishes when it moves a node (the API
// publishes the same type, lifecycle.EventMetalMoved, for verbs). Its data names the states, the
// outcome and the scrubbed reason: never a credential.
const EventMoved = lifecycle.EventMetalMoved

// event is what an outcome publishes with its write: the node's lifecycle transition and the
// event's data.
type event struct {
	t    lifecycle.Transition
	data map[string]any
}

func movedEvent(from, to metal.State, outcome, reason string) *event {
	data := map[string]any{"from": string(from), "to": string(to), "outcome": outcome}
	if reason != "" {
		data["reason"] = reason
	}
	return &event{t: lifecycle.Move, data: data}
}

// record writes an outcome; a node that moved meanwhile is left alone (see note).
func (r *Reconciler) record(ctx context.Context, lease store.Lease, o store.MetalOutcome, ev *event) error {
	_, err := r.note(ctx, lease, o, ev)
	return err
}

// note writes an outcome and its event in one transaction fenced by the lease and by the
// node's version. moved reports that the node changed since it was read (an abort, another
// verb, new credentials): nothing was written, and the change queued the node again.
func (r *Reconciler) note(ctx context.Context, lease store.Lease, o store.MetalOutcome, ev *event) (moved bool, err error) {
	err = reconcile.WriteResult(ctx, r.opts.DB, lease, func(tx store.Tx) error {
		moved = false
		n, err := store.RecordMetalOutcome(ctx, tx, o)
		if errors.Is(err, store.ErrNotFound) {
			moved = true
			return nil
		}
		if err != nil || ev == nil {
			return err
		}
		return lifecycle.MetalNode.Apply(ctx, tx, ev.t, lifecycle.Subject{TenantID: n.TenantID, ID: n.ID}, ev.data)
	})
	if moved {
		r.opts.Logger.LogAttrs(ctx, slog.LevelInfo, "metal node changed while its workflow ran; outcome discarded",
			slog.String("node", o.ID))
	}
	return moved, err
}

// answer is the BMC's last answer to keep: this run's, or the previous one when the run never
// reached the BMC.
func answer(rep bmc.Report, n store.MetalNode) string {
	if rep.LastAnswer != "" {
		return rep.LastAnswer
	}
	return n.LastAnswer
}

// power is the power state the run last read, or "" when it never read one.
func power(rep bmc.Report) string {
	switch {
	case rep.PowerLast != "":
		return string(rep.PowerLast)
	case rep.PowerAfter != "":
		return string(rep.PowerAfter)
	}
	return string(rep.PowerBefore)
}

// readAt is when the run last read the power, nil when it never did (the node keeps the
// previous reading's time with its reading).
func readAt(rep bmc.Report) *time.Time {
	if rep.PowerReadAt.IsZero() {
		return nil
	}
	t := rep.PowerReadAt
	return &t
}

// inventoryJSON stores the hardware summary as protojson of the API's MetalInventory, which is
// what the metal view reads back; nil when the run read none.
func inventoryJSON(inv *bmc.Inventory) ([]byte, error) {
	if inv == nil {
		return nil, nil
	}
	return protojson.Marshal(&v1.MetalInventory{
		Vendor: inv.Vendor, Model: inv.Model, Serial: inv.Serial, CpuModel: inv.CPUModel,
		Cpus: int32(inv.CPUs), CpuCores: int32(inv.CPUCores), CpuThreads: int32(inv.CPUThreads),
		MemoryBytes: inv.MemoryBytes, Dimms: int32(inv.DIMMs), Nics: int32(inv.NICs), Drives: int32(inv.Drives),
		BiosVersion: inv.BIOSVersion, BmcFirmware: inv.BMCFirmware,
	})
}
