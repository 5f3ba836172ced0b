package repository

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// calculatorCommand is a command line starting with bc: on most systems that runs GNU bc, the
// calculator, not the project's CLI (bcctl).
var calculatorCommand = regexp.MustCompile("(?m)(^|[`(\\s$])bc (configure|lb|events|usage|tenants|accounts|pools|quotas|--help|-o)\\b")

// TestDocsNameTheCLIBcctl: README and docs/ give the CLI's commands as bcctl, never as bc.
func TestDocsNameTheCLIBcctl(t *testing.T) {
	root := moduleRoot(t)
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	docs = append(docs, filepath.Join(root, "README.md"))
	for _, path := range docs {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range calculatorCommand.FindAllString(string(b), 3) {
			t.Errorf("%s: %q runs the calculator bc; the CLI is bcctl", path, m)
		}
	}
	if !calculatorCommand.MatchString("run `bc lb list`") || calculatorCommand.MatchString("run `bcctl lb list`") {
		t.Error("calculatorCommand does not tell bc from bcctl")
	}
}
