package sdk_test

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// maxClientModules bounds the module graph of a client that imports only the SDK (godo's is
// about as large): the SDK must never pull the server or its dependencies.
const maxClientModules = 15

// repoRoot is the directory of the root go.mod (two above this file).
func repoRoot(t *testing.T) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("no caller")
	}
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// freshModule writes a new module in a temporary directory that requires only the SDK (replaced
// by the copies in this repository, as a client's go.mod would name the tagged releases) and
// holds the given main.go. It returns the module's directory and an environment for the go
// command (GOFLAGS=-mod=mod, no workspace, the environment's GOPROXY).
func freshModule(t *testing.T, mainGo string) (string, []string) {
	t.Helper()
	root := repoRoot(t)
	dir := t.TempDir()
	gomod := "module example.com/sdkclient\n\ngo 1.24.0\n\nrequire better-compute.dev/compute/sdk/go v0.1.0\n\n" +
		"replace (\n\tbetter-compute.dev/compute/sdk/go => " + filepath.Join(root, "sdk", "go") +
		"\n\tbetter-compute.dev/compute/gen/go => " + filepath.Join(root, "gen", "go") + "\n)\n"
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(gomod), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(mainGo), 0o644); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off", "GOTOOLCHAIN=local")
	return dir, env
}

// goCmd runs the go command in dir and returns its standard output.
func goCmd(t *testing.T, dir string, env []string, args ...string) string {
	t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Dir, cmd.Env = dir, env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("go %s: %v\n%s%s", strings.Join(args, " "), err, out.String(), errb.String())
	}
	return out.String()
}

const minimalClient = `package main

import (
	"fmt"

	sdk "better-compute.dev/compute/sdk/go"
)

func main() { fmt.Println(sdk.New("http://127.0.0.1:1", "token") != nil) }
`

// TestClientModuleGraph: a fresh module importing only the SDK builds, and its whole module
// graph (go list -m all, the main module included) stays within maxClientModules, without the
// server's module.
func TestClientModuleGraph(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a fresh module")
	}
	dir, env := freshModule(t, minimalClient)
	goCmd(t, dir, env, "mod", "tidy")
	goCmd(t, dir, env, "build", "./...")
	var mods []string
	sc := bufio.NewScanner(strings.NewReader(goCmd(t, dir, env, "list", "-m", "all")))
	for sc.Scan() {
		if line := strings.TrimSpace(sc.Text()); line != "" {
			mods = append(mods, strings.Fields(line)[0])
		}
	}
	t.Logf("%d modules: %s", len(mods), strings.Join(mods, " "))
	if len(mods) > maxClientModules {
		t.Fatalf("an SDK-only client has %d modules, want <= %d:\n%s", len(mods), maxClientModules, strings.Join(mods, "\n"))
	}
	for _, m := range mods {
		if m == "better-compute.dev/compute" {
			t.Fatalf("the client's graph holds the server module: %v", mods)
		}
	}
	gomod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(gomod, []byte("\ngo 1.24.0\n")) {
		t.Fatalf("tidy raised the client's go line:\n%s", gomod)
	}
}
