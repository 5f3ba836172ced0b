package repository

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "better-compute.dev/compute"

// layers are the packages some code must not reach, even through others: the reconcilers meet
// the API only through package contract (and lifecycle), the generic runner knows a provider's
// errors only by the methods reconcile defines (reconcile/errors.go), and a provider neither
// drives the runner nor touches the database.
var layers = []struct {
	from, mustNotReach string
}{
	{"./reconcile/...", module + "/core"},
	{"./provider/...", module + "/reconcile"},
	{"./provider/...", module + "/store"},
}

// TestLayers: no package of a layer depends, directly or through others, on what it must not
// reach. Test files are not counted: a reconciler's tests may drive the API to make resources.
func TestLayers(t *testing.T) {
	root := moduleRoot(t)
	for _, l := range layers {
		deps := dependencies(t, root, l.from)
		if slices.ContainsFunc(deps, within(l.mustNotReach)) {
			t.Errorf("%s depends on %s (go list -deps %s): %s", l.from, l.mustNotReach, l.from, strings.Join(slices.DeleteFunc(deps, func(d string) bool { return !within(l.mustNotReach)(d) }), ", "))
		}
	}
	// The check sees a dependency where there is one: the application wires core, the runner
	// and a provider together.
	app := dependencies(t, root, "./app")
	for _, want := range []string{module + "/core", module + "/provider", module + "/reconcile"} {
		if !slices.Contains(app, want) {
			t.Errorf("go list -deps ./app does not list %s: the layer check cannot see dependencies", want)
		}
	}
}

// within reports whether a package is pkg or below it.
func within(pkg string) func(string) bool {
	return func(dep string) bool { return dep == pkg || strings.HasPrefix(dep, pkg+"/") }
}

// dependencies lists the packages pattern's (non-test) packages import, directly or not.
func dependencies(t *testing.T, root, pattern string) []string {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", pattern)
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps %s: %v", pattern, err)
	}
	return strings.Fields(string(out))
}
