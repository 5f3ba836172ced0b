package app_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"better-compute.dev/compute/app"
	"better-compute.dev/compute/app/apptest"
	"better-compute.dev/compute/provider/digitalocean/sim"
	"better-compute.dev/compute/store"
	"better-compute.dev/compute/testwait"
)

// retainedCounts are the rows of the retained tables at one moment.
type retainedCounts struct {
	events, idempotency, work, usage int
	// openUsage counts the intervals still billing (never pruned).
	openUsage int
}

func countRetained(t *testing.T, q store.Querier) retainedCounts {
	t.Helper()
	var c retainedCounts
	err := q.QueryRow(context.Background(), `SELECT
		(SELECT count(*) FROM events) + (SELECT count(*) FROM event_inbox),
		(SELECT count(*) FROM idempotency_keys),
		(SELECT count(*) FROM work_items WHERE resource_id <> $1),
		(SELECT count(*) FROM usage_records),
		(SELECT count(*) FROM usage_records WHERE ended_at IS NULL)`, store.PeriodicResourceID).
		Scan(&c.events, &c.idempotency, &c.work, &c.usage, &c.openUsage)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestRetentionUnderChurn creates and deletes load balancers through the API, round after round,
// with every retention set short: events, idempotency records, finished work items and closed usage
// are pruned by the replica's own passes, so after each round the tables hold at most two rounds'
// worth of rows while the churn writes many times that. A load balancer kept ready all along keeps
// its open usage interval, however old: usage still billing is never pruned.
func TestRetentionUnderChurn(t *testing.T) {
	if testing.Short() {
		t.Skip("drives load balancers through the reconciler")
	}
	simulator := sim.New(sim.Options{AcceptAnyToken: true, RequestsPerMinute: 100000, RequestsPerHour: 1000000,
		LoadBalancerActiveDelay: 20 * time.Millisecond, LoadBalancerIPDelay: 20 * time.Millisecond})
	simURL, err := simulator.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = simulator.Close() })
	const keep = 300 * time.Millisecond
	s := apptest.Start(t, apptest.WithReconcile(), func(c *app.Config) {
		r := &c.Reconcilers
		r.PollInterval, r.ProviderPoll, r.DependencyPoll = 20*time.Millisecond, 50*time.Millisecond, 50*time.Millisecond
		r.BackoffInitial, r.BackoffMax = 20*time.Millisecond, 200*time.Millisecond
		r.Retention = app.RetentionConfig{Events: keep, Idempotency: keep, WorkItems: keep, Usage: keep, Interval: 50 * time.Millisecond}
	})
	s.SimulatorURL = simURL
	tn := s.NewTenant(t, "retention", "editor")
	q := s.App.DB.Q()

	create := func(name string) string {
		status, got := s.PostJSON(t, "/api/compute/loadBalancers/create", tn.Token, map[string]any{
			"tenantId": tn.ID, "poolId": tn.PoolID, "name": name, "region": "nyc3", "targets": map[string]any{"pool": true},
			"forwarding":     []any{map[string]any{"entryProtocol": "http", "entryPort": 80, "targetProtocol": "http", "targetPort": 8080}},
			"idempotencyKey": name,
		})
		if status != http.StatusOK {
			t.Fatalf("create %s: %d %v", name, status, got)
		}
		return got["loadBalancer"].(map[string]any)["id"].(string)
	}
	state := func(id string) string {
		status, got := s.PostJSON(t, "/api/compute/loadBalancers/get", tn.Token, map[string]any{"tenantId": tn.ID, "loadBalancerId": id})
		if status == http.StatusNotFound {
			return "deleted"
		}
		if status != http.StatusOK {
			t.Fatalf("get %s: %d %v", id, status, got)
		}
		return got["loadBalancer"].(map[string]any)["state"].(string)
	}
	waitAll := func(ids []string, want string) {
		testwait.Until(t, time.Minute, "load balancers "+want, func() (bool, string) {
			for _, id := range ids {
				if st := state(id); st != want {
					return false, id + " is " + st
				}
			}
			return true, ""
		})
	}

	kept := create("kept")
	waitAll([]string{kept}, "ready")

	// Each round writes, per load balancer, one idempotency record, one work item, one usage
	// interval and at least three events (created, ready, deleted).
	const rounds, perRound = 6, 4
	const eventsPerLB = 3
	// What two rounds leave at most, plus the kept load balancer's rows (and, for events, a
	// margin for an error event or an update a pass may add).
	bound := retainedCounts{
		events: 2*perRound*(eventsPerLB+2) + 4, idempotency: 2*perRound + 1, work: 2*perRound + 1, usage: 2*perRound + 1,
	}
	var samples []retainedCounts
	for round := range rounds {
		ids := make([]string, perRound)
		for i := range ids {
			ids[i] = create(fmt.Sprintf("churn-%d-%d", round, i))
		}
		waitAll(ids, "ready")
		for _, id := range ids {
			if status, got := s.PostJSON(t, "/api/compute/loadBalancers/delete", tn.Token, map[string]any{"tenantId": tn.ID, "loadBalancerId": id}); status != http.StatusOK {
				t.Fatalf("delete %s: %d %v", id, status, got)
			}
		}
		waitAll(ids, "deleted")
		// A reader numbers the inbox, so both the inbox and the numbered events are pruned.
		if status, got := s.PostJSON(t, "/api/compute/events/list", tn.Token, map[string]any{"tenantId": tn.ID}); status != http.StatusOK {
			t.Fatalf("events: %d %v", status, got)
		}
		var c retainedCounts
		testwait.Until(t, time.Minute, "the retained tables within two rounds' rows", func() (bool, string) {
			c = countRetained(t, q)
			ok := c.events <= bound.events && c.idempotency <= bound.idempotency && c.work <= bound.work && c.usage <= bound.usage
			return ok, fmt.Sprintf("round %d: %+v, bound %+v", round, c, bound)
		})
		samples = append(samples, c)
		if c.openUsage != 1 {
			t.Fatalf("round %d: %d open usage intervals, want the kept load balancer's one", round, c.openUsage)
		}
	}
	written := retainedCounts{
		events: rounds * perRound * eventsPerLB, idempotency: rounds * perRound, work: rounds * perRound, usage: rounds * perRound,
	}
	if written.events <= bound.events || written.idempotency <= bound.idempotency || written.work <= bound.work || written.usage <= bound.usage {
		t.Fatalf("the churn wrote %+v, not more than the bound %+v: the test shows nothing", written, bound)
	}
	t.Logf("written at least %+v; retained after each round %+v", written, samples)
	// The kept load balancer has been ready for longer than every retention: still billing, its
	// interval stays open and listed.
	var open int
	if err := q.QueryRow(context.Background(), `SELECT count(*) FROM usage_records WHERE resource_id = $1 AND ended_at IS NULL`, kept).Scan(&open); err != nil || open != 1 {
		t.Fatalf("the kept load balancer's open usage: %d rows, %v", open, err)
	}
}
