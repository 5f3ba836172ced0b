package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/term"
)

// config is the file bcctl configure writes: one endpoint, tenant and token.
type config struct {
	Endpoint string `json:"endpoint,omitempty"`
	Tenant   string `json:"tenant,omitempty"`
	Token    string `json:"token,omitempty"`
}

// configFile is where the config lives: --config, $BC_CONFIG, $XDG_CONFIG_HOME/bcctl/config.json,
// then ~/.config/bcctl/config.json.
func configFile(env Env, flagPath string) (string, error) {
	if flagPath != "" {
		return flagPath, nil
	}
	if p := env.Getenv("BC_CONFIG"); p != "" {
		return p, nil
	}
	if x := env.Getenv("XDG_CONFIG_HOME"); x != "" {
		return filepath.Join(x, "bcctl", "config.json"), nil
	}
	home := env.Getenv("HOME")
	if home == "" {
		return "", errors.New("cannot place the config file: set HOME, XDG_CONFIG_HOME or BC_CONFIG")
	}
	return filepath.Join(home, ".config", "bcctl", "config.json"), nil
}

// loadConfig reads the config; a missing file is an empty config.
func loadConfig(env Env, flagPath string) (config, string, error) {
	path, err := configFile(env, flagPath)
	if err != nil {
		return config{}, "", err
	}
	raw, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return config{}, path, nil
	}
	if err != nil {
		return config{}, path, fmt.Errorf("read %s: %w", path, err)
	}
	var cfg config
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return config{}, path, fmt.Errorf("%s is not a bcctl config file (JSON): %v", path, err)
	}
	if st, err := os.Stat(path); err == nil && st.Mode().Perm()&0o077 != 0 && cfg.Token != "" {
		fmt.Fprintf(env.Stderr, "bcctl: warning: %s holds a token and is readable by others (mode %o); chmod 600 it\n", path, st.Mode().Perm())
	}
	return cfg, path, nil
}

// saveConfig writes the config with mode 0600 in a directory of mode 0700, replacing the old
// file in one rename so that a reader never sees half a file.
func saveConfig(path string, cfg config) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	raw, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".config-*.json")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(append(raw, '\n')); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// configure saves the endpoint, tenant and token; `bcctl configure show` prints them, the token only
// as set or not.
func configure(_ context.Context, c *cli, args []string) error {
	fs := c.flags("configure", `bcctl configure [--endpoint URL] [--tenant ID] [--token-stdin] [--clear-token]
       bcctl configure show

Saves the endpoint, tenant and token to the config file (mode 0600). Without --token-stdin, and
with a terminal on standard input, bcctl asks for the token without echoing it. The token is never
printed.`)
	tokenStdin := fs.Bool("token-stdin", false, "read the token from standard input (one line)")
	clearToken := fs.Bool("clear-token", false, "remove the saved token")
	pos, err := c.parse(fs, args, false)
	if err != nil {
		return err
	}
	cfg, path, err := loadConfig(c.env, c.configPath)
	if err != nil {
		return err
	}
	if len(pos) == 1 && pos[0] == "show" {
		return c.printConfig(path, cfg)
	}
	if len(pos) != 0 {
		return usagef("configure takes no arguments but show (got %q)", strings.Join(pos, " "))
	}
	if c.endpoint != "" {
		cfg.Endpoint = strings.TrimRight(c.endpoint, "/")
	}
	if c.tenant != "" {
		cfg.Tenant = c.tenant
	}
	switch {
	case *clearToken:
		cfg.Token = ""
	case *tokenStdin:
		tok, err := readLine(c.env.Stdin)
		if err != nil {
			return fmt.Errorf("read the token from standard input: %w", err)
		}
		cfg.Token = tok
	default:
		if f, ok := c.env.Stdin.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
			fmt.Fprint(c.env.Stderr, "token (empty keeps the saved one): ")
			raw, err := term.ReadPassword(int(f.Fd()))
			fmt.Fprintln(c.env.Stderr)
			if err != nil {
				return err
			}
			if tok := strings.TrimSpace(string(raw)); tok != "" {
				cfg.Token = tok
			}
		}
	}
	if cfg.Token != "" && strings.ContainsAny(cfg.Token, " \t\r\n") {
		return usagef("the token holds white space: give it alone on one line")
	}
	if err := saveConfig(path, cfg); err != nil {
		return fmt.Errorf("save %s: %w", path, err)
	}
	return c.printConfig(path, cfg)
}

func readLine(r io.Reader) (string, error) {
	line, err := bufio.NewReader(r).ReadString('\n')
	if err != nil && !(errors.Is(err, io.EOF) && line != "") {
		return "", err
	}
	return strings.TrimSpace(line), nil
}

func (c *cli) printConfig(path string, cfg config) error {
	view := map[string]any{"path": path, "endpoint": cfg.Endpoint, "tenant": cfg.Tenant, "tokenSet": cfg.Token != ""}
	if c.output == "json" {
		return writeJSONValue(c.env.Stdout, view)
	}
	set := "not set"
	if cfg.Token != "" {
		set = "set"
	}
	return writeTable(c.env.Stdout, []string{"CONFIG", "ENDPOINT", "TENANT", "TOKEN"}, [][]string{{path, cfg.Endpoint, cfg.Tenant, set}})
}
