package store_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"better-compute.dev/compute/store"
	"better-compute.dev/compute/store/storetest"
)

// TestEventCursorsNeverSkipALateCommit: writers of one tenant append events in transactions that
// commit after random pauses (so a later-started one often commits first, and readers run in
// between), while readers follow the tenant's events by cursor. Every reader must see seqs 1..N
// in order with no gap (a gap would be an event numbered below a cursor already passed) and every
// committed event exactly once.
func TestEventCursorsNeverSkipALateCommit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := storetest.New(t)
	const tenant, writers, perWriter, readers = "tn-events", 6, 30, 3
	var done atomic.Bool
	wg := appendLate(t, db, writers, perWriter, func() []string { return []string{tenant} })
	type seen struct {
		seqs []int64
		ids  []string
	}
	results := make([]seen, readers)
	var rwg sync.WaitGroup
	for r := range readers {
		rwg.Add(1)
		go func() {
			defer rwg.Done()
			var cursor int64
			for {
				last := done.Load()
				evs, err := store.ListEvents(ctx, db.Q(), tenant, cursor, 50, "")
				if err != nil {
					t.Error(err)
					return
				}
				for _, e := range evs {
					results[r].seqs = append(results[r].seqs, e.Seq)
					results[r].ids = append(results[r].ids, e.ID)
					cursor = e.Seq
				}
				if last && len(evs) == 0 {
					return
				}
			}
		}()
	}
	wg.Wait()
	done.Store(true)
	rwg.Wait()
	const total = writers * perWriter
	for r, got := range results {
		if len(got.seqs) != total {
			t.Errorf("reader %d saw %d events, want %d", r, len(got.seqs), total)
		}
		ids := map[string]bool{}
		for i, s := range got.seqs {
			if s != int64(i+1) {
				t.Fatalf("reader %d: event %d has seq %d, want %d (a gap or a repeat)", r, i, s, i+1)
			}
			if ids[got.ids[i]] {
				t.Fatalf("reader %d saw %s twice", r, got.ids[i])
			}
			ids[got.ids[i]] = true
		}
	}
	var left int
	if err := db.Q().QueryRow(ctx, `SELECT count(*) FROM event_inbox`).Scan(&left); err != nil || left != 0 {
		t.Errorf("inbox holds %d events after the last read (err %v), want 0", left, err)
	}
}

// appendLate starts writers that each commit perWriter transactions appending an event to each
// of the tenants tenants() names, committing after a random pause (so a later-started one often
// commits first); wait on the returned group.
func appendLate(t *testing.T, db *store.DB, writers, perWriter int, tenants func() []string) *sync.WaitGroup {
	ctx := context.Background()
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perWriter {
				err := store.ExecuteTx(ctx, db, func(tx store.Tx) error {
					for _, tn := range tenants() {
						if _, err := store.AppendEvent(ctx, tx, store.Event{TenantID: tn, ID: fmt.Sprintf("ev-%s-%d-%03d", tn, w, i), Type: "t", ResourceID: "r"}); err != nil {
							return err
						}
					}
					time.Sleep(time.Duration(rand.IntN(15)) * time.Millisecond)
					return nil
				})
				if err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	return &wg
}
