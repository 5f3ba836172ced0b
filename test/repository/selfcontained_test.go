package repository

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// outsidePaths are references to files beside the checkout rather than in it: a clone does not
// have them, so nothing the repository ships (code, tests, docs, scripts) may read or cite them.
var outsidePaths = []string{"../shared/", "shared/seeds/"}

// TestNothingPointsOutsideTheRepository: no tracked text file names a path beside the checkout.
// The repository is whole on its own: docs/api.md is the API's reference here.
func TestNothingPointsOutsideTheRepository(t *testing.T) {
	root := moduleRoot(t)
	checked := 0
	for _, name := range trackedFiles(t, root) {
		// This file names the paths it looks for; generated trees and the console's build
		// are made from files this test reads.
		if name == "" || name == "test/repository/selfcontained_test.go" || allowedLarge(name) {
			continue
		}
		raw, err := os.ReadFile(filepath.Join(root, name))
		if err != nil || bytes.IndexByte(raw, 0) >= 0 {
			continue // deleted in the work tree, or binary
		}
		checked++
		for _, p := range outsidePaths {
			if i := bytes.Index(raw, []byte(p)); i >= 0 {
				line := 1 + bytes.Count(raw[:i], []byte("\n"))
				t.Errorf("%s:%d names %q, a path beside the checkout that a clone does not have", name, line, p)
			}
		}
	}
	if checked < 100 {
		t.Fatalf("only %d tracked files read", checked)
	}
}
