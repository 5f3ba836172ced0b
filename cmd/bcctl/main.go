// Command bcctl is the command line of the Better Compute control plane, built on sdk/go.
//
//	bcctl configure --endpoint https://compute.example --tenant acme --token-stdin < token.txt
//	bcctl lb create --name web --pool pool_... --region nyc3 --forward http:80:http:8080 --wait
//	bcctl lb list -o json
//
// Run `bcctl --help` (or `bcctl <command> --help`) for every command; docs/cli.md describes them and the
// exit codes.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := Run(ctx, os.Args[1:], Env{Getenv: os.Getenv, Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr})
	stop()
	os.Exit(code)
}

// Exit codes, one per class of failure (docs/cli.md).
const (
	ExitOK           = 0
	ExitOther        = 1 // INTERNAL, an answer that is not the platform's, anything unclassified
	ExitUsage        = 2 // the command line does not parse
	ExitInvalidInput = 3 // INVALID_INPUT: the request is wrong; the message names the field
	ExitNotFound     = 4 // NOT_FOUND
	ExitDenied       = 5 // UNAUTHENTICATED or ACCESS_DENIED: the token is missing, unknown or lacks the permission
	ExitUnavailable  = 6 // UNAVAILABLE, or the server could not be reached: retrying later may succeed
	ExitConflict     = 7 // INVALID_STATE or QUOTA_EXCEEDED: the request is right but the state forbids it now
	ExitWaitFailed   = 8 // wait: the time ran out, or the load balancer turned error
)

// Env is what a run of bcctl sees of its process: the environment, standard streams.
type Env struct {
	Getenv func(string) string
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
}

// usageError is a command line that does not parse: exit status 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, a ...any) error { return &usageError{fmt.Sprintf(format, a...)} }

// exitError carries a chosen exit status with its message.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// command is one runnable verb.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, c *cli, args []string) error
}

// group is a noun with its verbs ("lb" -> create, list, ...).
type group struct {
	name    string
	aliases []string
	summary string
	verbs   []command
}

func groups() []group {
	return []group{
		{name: "configure", summary: "save the endpoint, tenant and token (bcctl configure --help)"},
		{name: "lb", aliases: []string{"loadbalancers", "load-balancers"}, summary: "load balancers", verbs: lbCommands()},
		{name: "events", summary: "the tenant's events", verbs: eventCommands()},
		{name: "usage", summary: "metered usage (bcctl usage --help)"},
		{name: "tenants", aliases: []string{"tenant"}, summary: "tenants (platform admins)", verbs: tenantCommands()},
		{name: "accounts", aliases: []string{"account"}, summary: "provider accounts (platform admins write)", verbs: accountCommands()},
		{name: "pools", aliases: []string{"pool"}, summary: "pools (platform admins write)", verbs: poolCommands()},
		{name: "quotas", aliases: []string{"quota"}, summary: "quotas (platform admins write)", verbs: quotaCommands()},
		{name: "completion", summary: "print a shell completion script (bcctl completion bash)"},
	}
}

// Run executes one command line and returns the process's exit status.
func Run(ctx context.Context, args []string, env Env) int {
	c := &cli{env: env}
	err := c.dispatch(ctx, args)
	return c.finish(err)
}

func (c *cli) dispatch(ctx context.Context, args []string) error {
	// Global flags may come before the command too: bcctl -o json lb list.
	fs := c.flags("bcctl", "bcctl [global flags] <command> [<verb>] [flags] [args]")
	fs.Usage = func() { printUsage(c.env.Stdout) }
	rest, err := c.parse(fs, args, true)
	if err != nil {
		return err
	}
	if len(rest) == 0 {
		printUsage(c.env.Stderr)
		return usagef("no command given")
	}
	name, rest := rest[0], rest[1:]
	if name == "help" {
		if len(rest) == 0 {
			printUsage(c.env.Stdout)
			return nil
		}
		name, rest = rest[0], append(rest[1:], "--help")
	}
	for _, g := range groups() {
		if g.name != name && !contains(g.aliases, name) {
			continue
		}
		switch g.name {
		case "configure":
			return configure(ctx, c, rest)
		case "usage":
			return usageCmd(ctx, c, rest)
		case "completion":
			return completion(ctx, c, rest)
		}
		if len(rest) == 0 || isHelp(rest[0]) {
			w := c.env.Stdout
			if len(rest) == 0 {
				w = c.env.Stderr
			}
			printGroupUsage(w, g)
			if len(rest) == 0 {
				return usagef("bcctl %s: no verb given", g.name)
			}
			return nil
		}
		for _, v := range g.verbs {
			if v.name == rest[0] {
				return v.run(ctx, c, rest[1:])
			}
		}
		printGroupUsage(c.env.Stderr, g)
		return usagef("bcctl %s: unknown verb %q", g.name, rest[0])
	}
	printUsage(c.env.Stderr)
	return usagef("unknown command %q", name)
}

func isHelp(s string) bool { return s == "-h" || s == "-help" || s == "--help" || s == "help" }

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// finish prints err (never a token: messages come from the server or from bcctl itself) and maps
// it to the exit status.
func (c *cli) finish(err error) int {
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return ExitOK
	}
	code, report := classify(err)
	if c.output == "json" {
		writeJSONError(c.env.Stderr, report)
	} else {
		fmt.Fprintln(c.env.Stderr, "bcctl:", report.text())
	}
	return code
}

func printUsage(w io.Writer) {
	fmt.Fprint(w, `bcctl: the command line of the Better Compute control plane

usage: bcctl [global flags] <command> [<verb>] [flags] [args]

commands:
`)
	for _, g := range groups() {
		fmt.Fprintf(w, "  %-10s %s\n", g.name, g.summary)
		for _, v := range g.verbs {
			fmt.Fprintf(w, "    %-10s %s\n", v.name, v.summary)
		}
	}
	fmt.Fprint(w, `
global flags (accepted by every command, before or after it):
`+globalFlagsHelp+`
Run "bcctl <command> <verb> --help" for a verb's flags.

exit codes: 0 ok, 1 other failure, 2 usage, 3 invalid input, 4 not found,
  5 unauthenticated or access denied, 6 unavailable (retry), 7 invalid state or quota exceeded,
  8 wait timed out or the load balancer turned error
`)
}

func printGroupUsage(w io.Writer, g group) {
	fmt.Fprintf(w, "usage: bcctl %s <verb> [flags] [args]\n\n%s:\n", g.name, g.summary)
	for _, v := range g.verbs {
		fmt.Fprintf(w, "  %-10s %s\n", v.name, v.summary)
	}
	fmt.Fprintf(w, "\nRun \"bcctl %s <verb> --help\" for a verb's flags.\n", g.name)
}
