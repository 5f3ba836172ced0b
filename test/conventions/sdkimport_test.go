package conventions

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// sdkModule is the client SDK's module path.
const sdkModule = "better-compute.dev/compute/sdk/go"

// sdkClients are the main module's packages that are clients of the API, and so may use the SDK.
var sdkClients = []string{"better-compute.dev/compute/cmd/bcctl"}

// TestServerSideImportsNoSDK: no package of the main module (tests aside) imports the client SDK
// module, except the API's own clients; the server builds its errors from apierr and errors.proto.
// The server binary's whole dependency graph is checked too, so a package importing the SDK
// cannot reach the server through a neighbour.
func TestServerSideImportsNoSDK(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, "better-compute.dev/compute/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	pkgs := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(pkgs) < 10 {
		t.Fatalf("go list named only %d packages", len(pkgs))
	}
	for _, line := range pkgs {
		fields := strings.Fields(line)
		if slices.Contains(sdkClients, fields[0]) {
			continue
		}
		for _, imp := range fields[1:] {
			if imp == sdkModule || strings.HasPrefix(imp, sdkModule+"/") {
				t.Errorf("%s imports the client SDK (%s)", fields[0], imp)
			}
		}
	}
	deps, err := exec.Command("go", "list", "-deps", "better-compute.dev/compute/cmd/bc-server").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, deps)
	}
	if !strings.Contains(string(deps), "better-compute.dev/compute/server\n") {
		t.Fatalf("bc-server's dependencies do not include the server:\n%s", deps)
	}
	for _, dep := range strings.Fields(string(deps)) {
		if dep == sdkModule || strings.HasPrefix(dep, sdkModule+"/") {
			t.Errorf("the server binary depends on the client SDK (%s)", dep)
		}
	}
}
