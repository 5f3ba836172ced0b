// Command bc-server runs the Better Compute control plane.
//
//	bc-server serve            run a replica (configuration from BC_* environment variables)
//	bc-server migrate          apply the database migrations and exit
//	bc-server bootstrap-admin  make the first platform admin and print its token once
//	bc-server revoke-token     revoke a token by id
//	bc-server version          print the version, commit and Go version
//	bc-server dev              run everything on embedded defaults: local PostgreSQL, the OpenFGA
//	                           engine in process, the DigitalOcean simulator in process; prints the
//	                           address and a bootstrap admin token
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"better-compute.dev/compute/observe"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], osEnvironment(), os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// errUsage marks a command line that does not parse: exit status 2.
var errUsage = errors.New("usage")

// run executes one command and returns the process's exit status: 0 done, 1 failed, 2 the
// command line is wrong.
func run(ctx context.Context, args []string, env environment, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		printUsage(stderr)
		return 2
	}
	cmd, rest := args[0], args[1:]
	if cmd == "help" && len(rest) > 0 {
		cmd, rest = rest[0], []string{"--help"}
	}
	// --help anywhere asks for help: print it and do nothing else (serve and migrate take no flags,
	// so without this check they would start on `serve --help`).
	for _, a := range rest {
		if a == "--" {
			break
		}
		if isHelpFlag(a) {
			if !printCommandUsage(stdout, cmd) {
				fmt.Fprintf(stderr, "bc-server: unknown command %q\n", cmd)
				printUsage(stderr)
				return 2
			}
			return 0
		}
	}
	var err error
	switch cmd {
	case "help", "-h", "-help", "--help":
		printUsage(stdout)
		return 0
	case "serve":
		err = serve(ctx, env, stderr)
	case "migrate":
		err = migrate(ctx, env)
	case "bootstrap-admin":
		err = bootstrapAdmin(ctx, rest, env, stdout, stderr)
	case "revoke-token":
		err = revokeToken(ctx, rest, env, stdout, stderr)
	case "dev":
		err = dev(ctx, rest, env, stdout, stderr)
	case "version":
		b := observe.BuildInfo()
		fmt.Fprintf(stdout, "bc-server %s\ncommit %s\n%s\n", b.Version, b.Commit, b.GoVersion)
	default:
		fmt.Fprintf(stderr, "bc-server: unknown command %q\n", cmd)
		printUsage(stderr)
		return 2
	}
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		fmt.Fprintln(stderr, "bc-server:", err)
		return 2
	default:
		fmt.Fprintln(stderr, "bc-server:", err)
		return 1
	}
}

func printUsage(w io.Writer) {
	fmt.Fprint(w, `usage: bc-server <command> [flags]

commands:
  serve            run a replica (configuration from the BC_* environment variables below)
  migrate          apply the database migrations to BC_DATABASE_URL and exit
  bootstrap-admin  make the first platform admin on BC_DATABASE_URL and print its token once
                   (--additional mints another token for it; --rotate mints one and revokes the others)
  revoke-token     revoke a token by id: bc-server revoke-token tok_...
  dev              run everything on embedded defaults (local PostgreSQL, OpenFGA and the
                   DigitalOcean simulator in process) with a demo tenant
  version          print the version, the commit and the Go version it was built with
  help             print this text

environment:
`)
	for _, v := range envVars {
		fmt.Fprintf(w, "  %-26s %-22s %s\n", v.name, v.def, v.meaning)
	}
}

func isHelpFlag(a string) bool {
	return a == "-h" || a == "-help" || a == "--help" || a == "--h"
}

// commandUsage is each command's own help text.
var commandUsage = map[string]string{
	"serve": `usage: bc-server serve

Runs a replica: the API, the reconcilers and the console on BC_LISTEN. Configuration comes from
the BC_* environment variables (bc-server --help lists them); serve takes no flags.
`,
	"migrate": `usage: bc-server migrate

Applies the database migrations to BC_DATABASE_URL and exits.
`,
	"bootstrap-admin": `usage: bc-server bootstrap-admin [--name NAME] [--additional | --rotate]

Makes the first platform admin on BC_DATABASE_URL and prints its token once.
  --name NAME     display name of the admin principal (default platform-admin)
  --additional    the admin exists: mint another token for it
  --rotate        the admin exists: mint a new token and revoke its other tokens
`,
	"revoke-token": `usage: bc-server revoke-token TOKEN_ID

Revokes one token by id (tok_...); replicas stop accepting it within a minute.
`,
	"version": `usage: bc-server version

Prints the version, the commit and the Go version this binary was built with (the labels of
bc_build_info on /metrics).
`,
	"dev": `usage: bc-server dev [--addr HOST:PORT] [--ready-file PATH] [--database URL]

Runs everything on embedded defaults: a fresh schema of the local PostgreSQL, OpenFGA and the
DigitalOcean simulator in process, and a demo tenant; prints the address and tokens.
  --addr HOST:PORT    listen address (default BC_LISTEN, else 127.0.0.1:8080)
  --ready-file PATH   write the addresses and tokens as JSON here once serving
  --database URL      PostgreSQL URL (default BC_DATABASE_URL, else the local server)
`,
}

// printCommandUsage prints one command's help; false when there is no such command.
func printCommandUsage(w io.Writer, cmd string) bool {
	if isHelpFlag(cmd) || cmd == "help" {
		printUsage(w)
		return true
	}
	text, ok := commandUsage[cmd]
	if ok {
		fmt.Fprint(w, text)
	}
	return ok
}

// newLogger makes the JSON logger at the configured level.
func newLogger(w io.Writer, level slog.Level) *slog.Logger {
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level}))
}
