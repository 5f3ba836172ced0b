package main

import (
	"bytes"
	"context"
	"runtime"
	"strings"
	"testing"

	"better-compute.dev/compute/observe"
)

// TestHelpPrintsUsageAndDoesNothing: --help, on its own or after any command, prints usage on
// stdout and exits 0 without running the command (serve --help must not start a replica; it
// gets no database URL here, so running it would fail).
func TestHelpPrintsUsageAndDoesNothing(t *testing.T) {
	noEnv := environment{get: func(string) string { return "" }}
	cases := [][]string{
		{"--help"}, {"-h"}, {"help"},
		{"serve", "--help"}, {"migrate", "-h"}, {"bootstrap-admin", "--help"}, {"revoke-token", "--help"},
		{"dev", "--help"}, {"version", "--help"}, {"help", "serve"},
	}
	for _, args := range cases {
		var out, errb bytes.Buffer
		code := run(context.Background(), args, noEnv, &out, &errb)
		if code != 0 {
			t.Errorf("%v: exit %d, stderr %q", args, code, errb.String())
		}
		if !strings.HasPrefix(out.String(), "usage: bc-server") {
			t.Errorf("%v: stdout does not start with usage: %q", args, out.String())
		}
		if errb.Len() != 0 {
			t.Errorf("%v: wrote to stderr: %q", args, errb.String())
		}
	}
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"nonsense", "--help"}, noEnv, &out, &errb); code != 2 {
		t.Errorf("nonsense --help: exit %d, want 2", code)
	}
}

// TestVersionPrintsTheBuild: version prints the version, the commit and the Go version, the same
// build bc_build_info exports, and needs no configuration.
func TestVersionPrintsTheBuild(t *testing.T) {
	noEnv := environment{get: func(string) string { return "" }}
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"version"}, noEnv, &out, &errb); code != 0 || errb.Len() != 0 {
		t.Fatalf("version: exit %d, stderr %q", code, errb.String())
	}
	b := observe.BuildInfo()
	want := "bc-server " + b.Version + "\ncommit " + b.Commit + "\n" + runtime.Version() + "\n"
	if out.String() != want {
		t.Errorf("version printed %q, want %q", out.String(), want)
	}
	if b.Version == "" || b.Commit == "" {
		t.Errorf("build %+v has an empty field", b)
	}
}
