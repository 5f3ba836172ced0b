package app

import (
	"fmt"
	"time"

	"better-compute.dev/compute/reconcile"
	"better-compute.dev/compute/store"
)

// RetentionConfig says how long each kind of history is kept (ReconcileConfig.Retention). The
// zero value is production's defaults; cmd/bc-server fills it from the BC_* variables named on the
// fields and refuses values under the floors below. Tests shorten it further.
type RetentionConfig struct {
	// Events: how long events are kept after they happen (BC_EVENT_RETENTION). A watch or list
	// resuming from an older cursor continues at the oldest event kept.
	Events time.Duration
	// Idempotency: how long an idempotency record is kept after it is made
	// (BC_IDEMPOTENCY_RETENTION); a key replays for store.IdempotencyTTL (24 h) whatever this says.
	Idempotency time.Duration
	// WorkItems: how long a finished (idle) work item is kept (BC_WORK_RETENTION).
	WorkItems time.Duration
	// Usage: how long a closed usage interval is kept after it ended (BC_USAGE_RETENTION); open
	// intervals are never pruned.
	Usage time.Duration
	// Interval is how often each prune pass runs (a pass with a backlog comes back sooner).
	Interval time.Duration
}

// Defaults and floors of the retention settings.
const (
	DefaultEventRetention       = 30 * 24 * time.Hour
	DefaultIdempotencyRetention = store.IdempotencyTTL
	DefaultWorkRetention        = 30 * 24 * time.Hour
	// DefaultUsageRetention keeps a closed interval 400 days: a year of usage plus the month
	// being billed stays listable.
	DefaultUsageRetention    = 400 * 24 * time.Hour
	DefaultRetentionInterval = 10 * time.Minute

	// MinEventRetention keeps every event for an hour, far longer than any watch's reconnect.
	MinEventRetention = time.Hour
	// MinIdempotencyRetention is the seed's promise: a key replays for 24 h.
	MinIdempotencyRetention = store.IdempotencyTTL
	// MinWorkRetention keeps an idle item far longer than any lease, so its epoch still fences
	// a stalled holder of the previous lease.
	MinWorkRetention = time.Hour
	// MinUsageRetention keeps a closed interval 32 days after it ended: the bill of the month
	// it ended in is made from it after that month closes.
	MinUsageRetention = 32 * 24 * time.Hour
)

// WithDefaults fills the zero fields.
func (c RetentionConfig) WithDefaults() RetentionConfig {
	fill := func(d *time.Duration, def time.Duration) {
		if *d <= 0 {
			*d = def
		}
	}
	fill(&c.Events, DefaultEventRetention)
	fill(&c.Idempotency, DefaultIdempotencyRetention)
	fill(&c.WorkItems, DefaultWorkRetention)
	fill(&c.Usage, DefaultUsageRetention)
	fill(&c.Interval, DefaultRetentionInterval)
	return c
}

// CheckFloors refuses a retention under its floor (cmd/bc-server calls it on the BC_* values).
func (c RetentionConfig) CheckFloors() error {
	for _, f := range []struct {
		name      string
		got, want time.Duration
	}{
		{"BC_EVENT_RETENTION", c.Events, MinEventRetention},
		{"BC_IDEMPOTENCY_RETENTION", c.Idempotency, MinIdempotencyRetention},
		{"BC_WORK_RETENTION", c.WorkItems, MinWorkRetention},
		{"BC_USAGE_RETENTION", c.Usage, MinUsageRetention},
	} {
		if f.got < f.want {
			return fmt.Errorf("%s=%v: at least %v", f.name, f.got, f.want)
		}
	}
	return nil
}

// retentionKinds names each retained history's periodic pass. Work items keep the pass name
// they were pruned under before (pruneKind), so existing databases reuse its singleton item.
var retentionKinds = map[store.Retained]string{
	store.RetainedEvents:      "retention.events",
	store.RetainedIdempotency: "retention.idempotency",
	store.RetainedWork:        pruneKind,
	store.RetainedUsage:       "retention.usage",
}

// everyRetention registers one prune pass per retained history on runner.
func everyRetention(runner *reconcile.Runner, db *store.DB, c RetentionConfig) error {
	c = c.WithDefaults()
	keep := map[store.Retained]time.Duration{
		store.RetainedEvents: c.Events, store.RetainedIdempotency: c.Idempotency,
		store.RetainedWork: c.WorkItems, store.RetainedUsage: c.Usage,
	}
	for _, kind := range store.RetainedKinds {
		if err := runner.Every(retentionKinds[kind], c.Interval, reconcile.Prune(db, kind, keep[kind])); err != nil {
			return err
		}
	}
	return nil
}
