package store

import (
	osexec "os/exec"
	"strings"
	"testing"
)

// TestOnlyStoreImportsTheDriver: no package of the module but store and its test helpers
// (store/storetest) imports the driver, in its code or its tests. Everything else reaches the
// database through store's own types (Tx, Querier, Tracer, Conn).
func TestOnlyStoreImportsTheDriver(t *testing.T) {
	goTool, err := osexec.LookPath("go")
	if err != nil {
		t.Skip("the go command is not on PATH")
	}
	const module = "better-compute.dev/compute"
	out, err := osexec.Command(goTool, "list", "-e",
		"-f", `{{.ImportPath}} {{join .Imports " "}} {{join .TestImports " "}} {{join .XTestImports " "}}`,
		module+"/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	allowed := map[string]bool{module + "/store": true, module + "/store/storetest": true}
	packages := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		packages++
		if allowed[fields[0]] {
			continue
		}
		for _, imp := range fields[1:] {
			if strings.HasPrefix(imp, "github.com/jackc/pgx") {
				t.Errorf("%s imports %s: only store and store/storetest may name the driver", fields[0], imp)
			}
		}
	}
	if packages < 10 {
		t.Fatalf("go list named %d packages; expected the whole module", packages)
	}
}
