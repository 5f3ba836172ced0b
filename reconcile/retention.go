package reconcile

import (
	"context"
	"fmt"
	"time"

	"better-compute.dev/compute/store"
)

// Retention bounds for one pass of a Prune handler.
const (
	// PruneBatch is the most rows one prune statement deletes (one short transaction).
	PruneBatch = 1000
	// pruneBatchesPerPass bounds the batches one pass runs before giving its slot back, so a
	// backlog (a first start on a large table) never keeps a reconcile slot for long.
	pruneBatchesPerPass = 50
	// pruneBacklogPause is how soon a pass that left old rows behind comes back.
	pruneBacklogPause = time.Second
)

// Prune is a periodic pass deleting kind's rows older than keep, in batches of PruneBatch rows,
// each batch its own short statement outside any request's transaction. Register it with Every,
// one kind per pass: the pass's lease makes one replica at a time prune each table. A pass that
// stopped on its batch bound asks to come back at once (after pruneBacklogPause) rather than a
// whole interval later.
func Prune(db *store.DB, kind store.Retained, keep time.Duration) Handler {
	return HandlerFunc(func(ctx context.Context, _ store.Lease) (Result, error) {
		for range pruneBatchesPerPass {
			_, full, err := store.PruneBatch(ctx, db.Q(), store.PruneBatchParams{Kind: kind, Keep: keep, Limit: PruneBatch})
			if err != nil {
				return Result{}, fmt.Errorf("reconcile: prune %s: %w", kind, err)
			}
			if !full {
				return Result{}, nil
			}
		}
		return Result{RequeueAfter: pruneBacklogPause}, nil
	})
}
