package server

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"better-compute.dev/compute/authz"
	"better-compute.dev/compute/contract"
	"better-compute.dev/compute/observe"
	"better-compute.dev/compute/store"
)

// statsTimeout bounds the database reads of one scrape: a slow database makes the scrape
// report bc_db_stats_up 0, not hang.
const statsTimeout = 2 * time.Second

// dbCollector reads, at each scrape, the pool's counters and the state the database holds for
// every replica: the work queue per kind, the events inbox and the shared provider budgets.
type dbCollector struct {
	db *store.DB

	acquired, idle, total, maxConns, constructing *prometheus.Desc
	acquires, waits, waitSeconds, canceled        *prometheus.Desc
	statsUp                                       *prometheus.Desc
	queued, due, leased, oldest                   *prometheus.Desc
	unqueued                                      *prometheus.Desc
	backlog, backlogAge                           *prometheus.Desc
	budget, budgetBlocked                         *prometheus.Desc
}

func newDBCollector(db *store.DB) *dbCollector {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, labels, nil)
	}
	return &dbCollector{
		db:           db,
		acquired:     d("bc_db_pool_acquired_conns", "Connections of the pool in use now."),
		idle:         d("bc_db_pool_idle_conns", "Idle connections of the pool."),
		total:        d("bc_db_pool_total_conns", "Connections the pool holds (acquired, idle and being opened)."),
		maxConns:     d("bc_db_pool_max_conns", "The pool's size bound."),
		constructing: d("bc_db_pool_constructing_conns", "Connections being opened now."),
		acquires:     d("bc_db_pool_acquires_total", "Connections handed out by the pool."),
		waits:        d("bc_db_pool_acquire_waits_total", "Acquires that found no idle connection and waited for one to be opened or returned."),
		waitSeconds:  d("bc_db_pool_acquire_wait_seconds_total", "Time acquires spent waiting for a connection."),
		canceled:     d("bc_db_pool_canceled_acquires_total", "Acquires given up because their context ended first."),
		statsUp:      d("bc_db_stats_up", "1 when this scrape read the queue, events and budget state from the database, 0 when it could not."),
		queued:       d("bc_work_queue_depth", "Work items with a due time (due now or later), by kind.", "kind"),
		due:          d("bc_work_queue_due", "Work items whose due time has come, by kind.", "kind"),
		leased:       d("bc_work_queue_leased", "Work items under a live lease, by kind.", "kind"),
		oldest:       d("bc_work_queue_oldest_due_age_seconds", "How long the longest-waiting due item of the kind has been due.", "kind"),
		unqueued: d("bc_resources_unqueued",
			"Provider-side resources not resting (ready with nothing to apply, error, deleted) that have no due work item, by kind: each is forgotten until the periodic pass queues it; always 0 when the work queue keeps its invariant.", "kind"),
		backlog:    d("bc_events_backlog", "Events committed but not yet numbered (the inbox readers drain)."),
		backlogAge: d("bc_events_backlog_oldest_age_seconds", "Age of the oldest event not yet numbered."),
		budget:     d("bc_provider_budget_tokens", "Requests left in a shared provider budget after its last lease (it refills from then on), by budget (12 hex digits of the token's SHA-256).", "budget"),
		budgetBlocked: d("bc_provider_budget_blocked_seconds",
			"How much longer the provider said a budget is spent (0 when it is not), by budget.", "budget"),
	}
}

func (c *dbCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.acquired, c.idle, c.total, c.maxConns, c.constructing, c.acquires, c.waits,
		c.waitSeconds, c.canceled, c.statsUp, c.queued, c.due, c.leased, c.oldest, c.unqueued, c.backlog, c.backlogAge, c.budget, c.budgetBlocked} {
		ch <- d
	}
}

func (c *dbCollector) Collect(ch chan<- prometheus.Metric) {
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v)
	}
	s := c.db.Pool().Stat()
	gauge(c.acquired, float64(s.AcquiredConns()))
	gauge(c.idle, float64(s.IdleConns()))
	gauge(c.total, float64(s.TotalConns()))
	gauge(c.maxConns, float64(s.MaxConns()))
	gauge(c.constructing, float64(s.ConstructingConns()))
	counter(c.acquires, float64(s.AcquireCount()))
	counter(c.waits, float64(s.EmptyAcquireCount()))
	counter(c.waitSeconds, s.EmptyAcquireWaitTime().Seconds())
	counter(c.canceled, float64(s.CanceledAcquireCount()))

	ctx, cancel := context.WithTimeout(context.Background(), statsTimeout)
	defer cancel()
	up := 1.0
	if qs, err := store.QueueStats(ctx, c.db); err == nil {
		for _, q := range qs {
			gauge(c.queued, float64(q.Queued), q.Kind)
			gauge(c.due, float64(q.Due), q.Kind)
			gauge(c.leased, float64(q.Leased), q.Kind)
			gauge(c.oldest, q.OldestDue.Seconds(), q.Kind)
		}
	} else {
		up = 0
	}
	if counts, err := store.CountUnqueued(ctx, c.db.Q(), contract.WorkKinds); err == nil {
		for _, k := range store.UnqueuedKinds {
			gauge(c.unqueued, float64(counts[k]), string(k))
		}
	} else {
		up = 0
	}
	if b, err := store.EventBacklogStat(ctx, c.db); err == nil {
		gauge(c.backlog, float64(b.Count))
		gauge(c.backlogAge, b.Oldest.Seconds())
	} else {
		up = 0
	}
	if bs, err := store.BudgetStats(ctx, c.db); err == nil {
		for _, b := range bs {
			gauge(c.budget, b.Tokens, b.Key)
			gauge(c.budgetBlocked, b.Blocked.Seconds(), b.Key)
		}
	} else {
		up = 0
	}
	gauge(c.statsUp, up)
}

// TimedAuthorizer reports the latency and outcome of every check az answers
// (bc_authz_check_duration_seconds); the other calls pass through.
func TimedAuthorizer(az authz.Authorizer) authz.Authorizer {
	if _, ok := az.(timedAuthorizer); ok || az == nil {
		return az
	}
	return timedAuthorizer{az}
}

type timedAuthorizer struct{ authz.Authorizer }

// Unwrap returns the authorizer being timed (tests count its engine checks).
func (t timedAuthorizer) Unwrap() authz.Authorizer { return t.Authorizer }

func (t timedAuthorizer) Check(ctx context.Context, c authz.Check) (bool, error) {
	start := time.Now()
	ok, err := t.Authorizer.Check(ctx, c)
	observe.AuthzChecked("check", ok, err, time.Since(start))
	return ok, err
}

func (t timedAuthorizer) BatchCheck(ctx context.Context, cs []authz.Check) ([]bool, error) {
	start := time.Now()
	res, err := t.Authorizer.BatchCheck(ctx, cs)
	all := err == nil
	for _, ok := range res {
		all = all && ok
	}
	observe.AuthzChecked("batch", all, err, time.Since(start))
	return res, err
}
