package replicas_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"better-compute.dev/compute/store"
	"better-compute.dev/compute/store/storetest"
)

// The audit is how the test sees who wrote what: triggers on the resource tables and the work
// queue record every committed row write with the writer's application_name (each replica
// connects with its own), in commit-consistent order (a sequence). It is PostgreSQL-only test
// scaffolding, installed in the test's own schema before the replicas start.

// installAudit creates the audit table and its triggers in schema.
func installAudit(t *testing.T, db *store.DB, schema string) {
	t.Helper()
	s := store.QuoteIdentifier(schema)
	stmts := []string{
		`CREATE TABLE ` + s + `.audit_writes (
			seq BIGSERIAL PRIMARY KEY, app TEXT NOT NULL, tbl TEXT NOT NULL, resource_id TEXT NOT NULL,
			holder TEXT, epoch BIGINT, at TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp())`,
		`CREATE FUNCTION ` + s + `.audit_row() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			IF TG_TABLE_NAME = 'work_items' THEN
				IF TG_OP = 'UPDATE' AND NEW.epoch > OLD.epoch THEN
					INSERT INTO ` + s + `.audit_writes (app, tbl, resource_id, holder, epoch)
					VALUES (current_setting('application_name'), 'claim', NEW.resource_id, NEW.lease_holder, NEW.epoch);
				END IF;
			ELSIF TG_TABLE_NAME IN ('events', 'usage_records') THEN
				INSERT INTO ` + s + `.audit_writes (app, tbl, resource_id) VALUES (current_setting('application_name'), TG_TABLE_NAME, NEW.resource_id);
			ELSE
				INSERT INTO ` + s + `.audit_writes (app, tbl, resource_id) VALUES (current_setting('application_name'), TG_TABLE_NAME, NEW.id);
			END IF;
			RETURN NEW;
		END $$`,
	}
	for _, table := range []string{"load_balancers", "instances", "events", "usage_records", "work_items"} {
		stmts = append(stmts, `CREATE TRIGGER audit_`+table+` AFTER INSERT OR UPDATE ON `+s+`.`+table+
			` FOR EACH ROW EXECUTE FUNCTION `+s+`.audit_row()`)
	}
	for _, stmt := range stmts {
		if _, err := db.Pool().Exec(context.Background(), stmt); err != nil {
			t.Fatalf("install audit: %v", err)
		}
	}
}

// auditRow is one recorded write.
type auditRow struct {
	seq      int64
	app, tbl string
	resource string
	holder   string
	epoch    int64
	at       time.Time
}

// auditSince returns the writes recorded after seq, in order.
func auditSince(t *testing.T, db *store.DB, seq int64) []auditRow {
	t.Helper()
	rows, err := db.Pool().Query(context.Background(),
		`SELECT seq, app, tbl, resource_id, coalesce(holder, ''), coalesce(epoch, 0), at FROM audit_writes WHERE seq > $1 ORDER BY seq`, seq)
	if err != nil {
		t.Fatal(err)
	}
	out, err := storetest.CollectRows(rows, func(r storetest.Rows) (auditRow, error) {
		var a auditRow
		err := r.Scan(&a.seq, &a.app, &a.tbl, &a.resource, &a.holder, &a.epoch, &a.at)
		return a, err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// auditHead is the last recorded sequence number.
func auditHead(t *testing.T, db *store.DB) int64 {
	t.Helper()
	var seq int64
	if err := db.Pool().QueryRow(context.Background(), `SELECT coalesce(max(seq), 0) FROM audit_writes`).Scan(&seq); err != nil {
		t.Fatal(err)
	}
	return seq
}

// heldLease is a lease a replica held when it was paused.
type heldLease struct {
	resource string
	epoch    int64
}

// leasesHeldBy lists the unexpired-or-not leases the work table shows for holder.
func leasesHeldBy(t *testing.T, db *store.DB, holder string) []heldLease {
	t.Helper()
	rows, err := db.Pool().Query(context.Background(),
		`SELECT resource_id, epoch FROM work_items WHERE lease_holder = $1 ORDER BY resource_id`, holder)
	if err != nil {
		t.Fatal(err)
	}
	out, err := storetest.CollectRows(rows, func(r storetest.Rows) (heldLease, error) {
		var h heldLease
		err := r.Scan(&h.resource, &h.epoch)
		return h, err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// checkFencing asserts what epoch fencing promises about a replica paused past its lease: every
// lease it held was taken over by a later claim, and after it resumed it wrote no row of a
// resource without first claiming that resource again (a write under a stale lease would show
// as a write with no new claim before it).
func checkFencing(t *testing.T, writes []auditRow, paused string, held []heldLease) {
	t.Helper()
	for _, h := range held {
		taken := false
		for _, w := range writes {
			if w.tbl == "claim" && w.resource == h.resource && w.epoch > h.epoch {
				taken = true
				break
			}
		}
		if !taken {
			t.Errorf("the lease of %s (epoch %d) held by the paused replica was never taken over", h.resource, h.epoch)
		}
	}
	reclaimed := map[string]bool{}
	stale := 0
	for _, w := range writes {
		if w.app != paused {
			continue
		}
		if w.tbl == "claim" {
			if w.holder == paused {
				reclaimed[w.resource] = true
			}
			continue
		}
		if w.tbl == "work_items" {
			continue // enqueues of other resources are not fenced on their leases
		}
		if !reclaimed[w.resource] {
			stale++
			if stale <= 5 {
				t.Errorf("paused replica %s wrote %s of %s after resuming without claiming it again (audit seq %d)",
					paused, w.tbl, w.resource, w.seq)
			}
		}
	}
	if stale > 5 {
		t.Errorf("... %d stale writes in all", stale)
	}
}

// describe summarises audit rows by writer and table, for the log.
func describe(writes []auditRow) string {
	counts := map[string]int{}
	for _, w := range writes {
		counts[w.app+" "+w.tbl]++
	}
	return fmt.Sprint(counts)
}
