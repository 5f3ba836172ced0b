package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"strings"
	"time"

	"connectrpc.com/connect"

	sdk "better-compute.dev/compute/sdk/go"
)

// cli holds a run's global flags and what they resolve to.
type cli struct {
	env Env

	endpoint   string
	tenant     string
	output     string
	configPath string
	timeout    time.Duration
}

const globalFlagsHelp = `  --endpoint URL     the server (default: $BC_ENDPOINT, then the config file)
  --tenant ID        the tenant the command acts in (default: $BC_TENANT, then the config file)
  -o, --output FMT   table (default) or json
  --config PATH      the config file (default: $BC_CONFIG, $XDG_CONFIG_HOME/bcctl/config.json, ~/.config/bcctl/config.json)
  --timeout DUR      bound on each call (default 30s)
  The token comes from $BC_TOKEN, then the config file; it is never a flag (flags show in ps).
`

// flags returns a FlagSet for one verb that also accepts the global flags.
func (c *cli) flags(name, synopsis string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(c.env.Stderr)
	fs.StringVar(&c.endpoint, "endpoint", c.endpoint, "the server's base URL")
	fs.StringVar(&c.tenant, "tenant", c.tenant, "the tenant id")
	if c.output == "" {
		c.output = "table"
	}
	fs.StringVar(&c.output, "output", c.output, "table or json")
	fs.StringVar(&c.output, "o", c.output, "table or json (short for --output)")
	fs.StringVar(&c.configPath, "config", c.configPath, "the config file")
	if c.timeout == 0 {
		c.timeout = 30 * time.Second
	}
	fs.DurationVar(&c.timeout, "timeout", c.timeout, "bound on each call")
	fs.Usage = func() {
		w := fs.Output()
		fmt.Fprintf(w, "usage: %s\n\nflags:\n", synopsis)
		fs.VisitAll(func(f *flag.Flag) {
			if isGlobalFlag(f.Name) {
				return
			}
			def := ""
			if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "[]" {
				def = " (default " + f.DefValue + ")"
			}
			fmt.Fprintf(w, "  --%-22s %s%s\n", f.Name, f.Usage, def)
		})
		fmt.Fprintf(w, "\nglobal flags:\n%s", globalFlagsHelp)
	}
	return fs
}

func isGlobalFlag(name string) bool {
	switch name {
	case "endpoint", "tenant", "output", "o", "config", "timeout":
		return true
	}
	return false
}

// parse parses flags interleaved with positional arguments (bcctl lb get plb_... -o json). With
// stopAtFirst it stops at the first positional argument (the command name), leaving the rest.
func (c *cli) parse(fs *flag.FlagSet, args []string, stopAtFirst bool) ([]string, error) {
	var positional []string
	for {
		// --help goes to stdout with status 0; a wrong flag's usage goes to stderr with status 2.
		for _, a := range args {
			if a == "--" || stopAtFirst {
				break
			}
			if isHelp(a) && a != "help" {
				fs.SetOutput(c.env.Stdout)
				fs.Usage()
				return nil, flag.ErrHelp
			}
		}
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, usagef("%v", err)
		}
		args = fs.Args()
		if len(args) == 0 {
			break
		}
		if stopAtFirst {
			positional = append(positional, args...)
			break
		}
		if args[0] == "--" {
			positional = append(positional, args[1:]...)
			break
		}
		positional = append(positional, args[0])
		args = args[1:]
	}
	if c.output != "table" && c.output != "json" {
		return nil, usagef("--output must be table or json, not %q", c.output)
	}
	return positional, nil
}

// parseVerb parses a verb's flags and checks the count of positional arguments.
func (c *cli) parseVerb(fs *flag.FlagSet, args []string, names ...string) ([]string, error) {
	pos, err := c.parse(fs, args, false)
	if err != nil {
		return nil, err
	}
	if len(pos) != len(names) {
		if len(names) == 0 {
			return nil, usagef("%s takes no arguments (got %q)", fs.Name(), strings.Join(pos, " "))
		}
		return nil, usagef("%s takes %s", fs.Name(), strings.Join(names, " "))
	}
	return pos, nil
}

// settings resolves endpoint, tenant and token: flags, then the environment, then the file.
type settings struct {
	endpoint, tenant, token string
}

func (c *cli) settings() (settings, error) {
	cfg, _, err := loadConfig(c.env, c.configPath)
	if err != nil {
		return settings{}, err
	}
	s := settings{endpoint: cfg.Endpoint, tenant: cfg.Tenant, token: cfg.Token}
	if v := c.env.Getenv("BC_ENDPOINT"); v != "" {
		s.endpoint = v
	}
	if v := c.env.Getenv("BC_TENANT"); v != "" {
		s.tenant = v
	}
	if v := c.env.Getenv("BC_TOKEN"); v != "" {
		s.token = v
	}
	if c.endpoint != "" {
		s.endpoint = c.endpoint
	}
	if c.tenant != "" {
		s.tenant = c.tenant
	}
	s.endpoint = strings.TrimRight(s.endpoint, "/")
	if s.endpoint == "" {
		return s, usagef("no endpoint: run bcctl configure --endpoint URL, or set --endpoint or BC_ENDPOINT")
	}
	return s, nil
}

// client returns an SDK client for the resolved settings and the tenant (required unless
// needTenant is false).
func (c *cli) client(needTenant bool) (*sdk.Client, string, error) {
	s, err := c.settings()
	if err != nil {
		return nil, "", err
	}
	if needTenant && s.tenant == "" {
		return nil, "", usagef("no tenant: give --tenant, set BC_TENANT, or run bcctl configure --tenant ID")
	}
	// An empty token still calls: the server answers UNAUTHENTICATED (exit 5), as for a wrong one.
	return sdk.New(s.endpoint, s.token, sdk.WithHTTPClient(&http.Client{})), s.tenant, nil
}

// call bounds one unary call by --timeout.
func (c *cli) call(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, c.timeout)
}

// errorReport is a failure as printed.
type errorReport struct {
	Code        string `json:"code"`
	Message     string `json:"message"`
	Field       string `json:"field,omitempty"`
	StateReason string `json:"stateReason,omitempty"`
}

func (r errorReport) text() string {
	s := r.Message
	if r.Code != "" {
		s = r.Code + ": " + s
	}
	if r.Field != "" {
		s += " (field " + r.Field + ")"
	}
	if r.StateReason != "" {
		s += " (state " + r.StateReason + ")"
	}
	return s
}

// classify maps an error to the exit status and what is printed.
func classify(err error) (int, errorReport) {
	var ue *usageError
	if errors.As(err, &ue) {
		return ExitUsage, errorReport{Code: "USAGE", Message: ue.msg}
	}
	var ee *exitError
	if errors.As(err, &ee) {
		_, rep := classify(ee.err)
		return ee.code, rep
	}
	if pe, ok := sdk.AsError(err); ok {
		rep := errorReport{Code: string(pe.Code), Message: pe.Message, Field: pe.Field, StateReason: pe.StateReason}
		switch pe.Code {
		case sdk.InvalidInput:
			return ExitInvalidInput, rep
		case sdk.NotFound:
			return ExitNotFound, rep
		case sdk.Unauthenticated, sdk.AccessDenied:
			return ExitDenied, rep
		case sdk.Unavailable:
			return ExitUnavailable, rep
		case sdk.InvalidState, sdk.QuotaExceeded:
			return ExitConflict, rep
		}
		if pe.Connect != nil && pe.Connect.Code() == connect.CodeDeadlineExceeded {
			return ExitUnavailable, errorReport{Code: "DEADLINE_EXCEEDED", Message: pe.Message}
		}
		return ExitOther, rep
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return ExitUnavailable, errorReport{Code: "DEADLINE_EXCEEDED", Message: err.Error()}
	}
	return ExitOther, errorReport{Message: err.Error()}
}
