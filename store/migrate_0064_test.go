package store_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"better-compute.dev/compute/store"
	"better-compute.dev/compute/store/storetest"
)

// TestMigrationsOf0064 on rows written before them: metal nodes get their normalised host key
// (the loopback spellings one host; later duplicates under the new key keep their rows with
// their id appended), and metal work items get their node's tenant as fairness group.
func TestMigrationsOf0064(t *testing.T) {
	t.Parallel()
	s := storetest.NewSchema(t, storetest.Unmigrated())
	ctx := context.Background()
	before := fstest.MapFS{}
	files, err := filepath.Glob("migrations/*.sql")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if filepath.Base(f) >= "0064" {
			continue
		}
		body, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		before[filepath.Base(f)] = &fstest.MapFile{Data: body}
	}
	if err := s.DB.MigrateFS(ctx, before); err != nil {
		t.Fatal(err)
	}
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := s.DB.Pool().Exec(ctx, sql, args...); err != nil {
			t.Fatal(err)
		}
	}
	exec(`INSERT INTO tenants (id, display_name) VALUES ('t1', 't1')`)
	node := func(id, address, protocol string, port int) {
		exec(`INSERT INTO metal_nodes (id, tenant_id, name, state, bmc_address, bmc_port, bmc_protocol, bmc_username, bmc_password_sealed)
			VALUES ($1, 't1', $1, 'enrolled', $2, $3, $4, 'u', '\x00')`, id, address, port, protocol)
	}
	node("n1", "127.0.0.1", "redfish", 443)
	node("n2", "LOCALHOST", "redfish", 443) // one host with n1 under the new key
	node("n3", "localhost", "ipmi", 443)    // another protocol: not a duplicate
	node("n4", "BMC.Example.", "redfish", 443)
	exec(`INSERT INTO work_items (kind, resource_id, due_at) VALUES ('metal.nodes', 'n1', now()), ('other.kind', 'n1', now())`)
	if err := s.DB.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]string{"n1": "127.0.0.1", "n2": "127.0.0.1#n2", "n3": "127.0.0.1", "n4": "bmc.example"} {
		n, err := store.GetMetalNode(ctx, s.DB.Q(), id)
		if err != nil {
			t.Fatal(err)
		}
		if n.BMCHostKey != want {
			t.Errorf("%s (%s): host key %q, want %q", id, n.BMCAddress, n.BMCHostKey, want)
		}
	}
	var groups []string
	rows, err := s.DB.Pool().Query(ctx, `SELECT kind || '=' || fair_group FROM work_items ORDER BY kind`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var g string
		if err := rows.Scan(&g); err != nil {
			t.Fatal(err)
		}
		groups = append(groups, g)
	}
	if got := strings.Join(groups, ","); got != "metal.nodes=t1,other.kind=" {
		t.Errorf("fairness groups %s", got)
	}
}
