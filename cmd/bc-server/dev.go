package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"

	"better-compute.dev/compute/app"
	"better-compute.dev/compute/netguard"
	"better-compute.dev/compute/seal"
	"better-compute.dev/compute/store"
)

// dev runs the whole control plane on embedded defaults: a private schema of the local
// PostgreSQL (dropped on exit), the OpenFGA engine in process, the DigitalOcean simulator in
// process, and a demo tenant ready for the README's curl walk-through.
func dev(ctx context.Context, args []string, env environment, stdout, stderr io.Writer) error {
	// The same BC_* variables as serve are checked (a bad knob stops dev too); dev supplies the
	// database schema, the key, the listener and the embedded parts itself.
	cfg, err := parseConfig(env, false)
	if err != nil {
		return err
	}
	log := newLogger(stderr, cfg.LogLevel)
	fs := flag.NewFlagSet("dev", flag.ContinueOnError)
	fs.SetOutput(stderr)
	// BC_LISTEN is honoured as serve honours it; unset, dev stays on loopback (its demo tokens
	// are printed, so it must not listen on every interface unless asked to).
	defAddr := "127.0.0.1:8080"
	if v := env.get("BC_LISTEN"); v != "" {
		defAddr = v
	}
	addr := fs.String("addr", defAddr, "listen address")
	readyFile := fs.String("ready-file", "", "write the addresses and tokens as JSON here once serving")
	defBase := cfg.App.DatabaseURL
	if defBase == "" {
		defBase = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
	}
	base := fs.String("database", defBase, "PostgreSQL URL")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	schema := "bc_dev_" + randomHex(4)
	dbURL, dropSchema, err := devSchema(ctx, *base, schema)
	if err != nil {
		return fmt.Errorf("dev database (is PostgreSQL running? `make postgres` starts it): %w", err)
	}
	defer dropSchema()
	key, err := seal.GenerateKey()
	if err != nil {
		return err
	}
	simURL, closeSim, err := startSimulator()
	if err != nil {
		return err
	}
	defer closeSim()
	ac := cfg.App
	ac.Listen, ac.DatabaseURL, ac.SealKey, ac.CORSOrigins = *addr, dbURL, key.Encode(), []string{"*"}
	ac.OpenFGAURL, ac.OpenFGADatastore, ac.Reconcile, ac.Replica, ac.Logger = "", "memory", true, "dev", log
	// The simulators listen on loopback; dev stops at once on Ctrl-C.
	ac.OutboundAllow, ac.DrainDelay = append(netguard.AllowLoopback(), ac.OutboundAllow...), 0
	a, err := app.Start(ctx, ac)
	if err != nil {
		return err
	}
	defer shutdown(a)
	info, err := seedDev(ctx, a, simURL)
	if err != nil {
		return fmt.Errorf("seed: %w", err)
	}
	info.URL, info.Schema = a.URL, schema
	printDev(stdout, info)
	if *readyFile != "" {
		b, _ := json.Marshal(info)
		if err := os.WriteFile(*readyFile, b, 0o600); err != nil {
			return err
		}
	}
	<-ctx.Done()
	return nil
}

// devSchema makes a fresh schema and returns a URL whose connections use it.
func devSchema(ctx context.Context, base, schema string) (string, func(), error) {
	conn, err := store.Connect(ctx, base)
	if err != nil {
		return "", nil, err
	}
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		conn.Close(ctx)
		return "", nil, err
	}
	conn.Close(ctx)
	u, err := url.Parse(base)
	if err != nil {
		return "", nil, err
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	drop := func() {
		c, err := store.Connect(context.Background(), base)
		if err != nil {
			return
		}
		defer c.Close(context.Background())
		_, _ = c.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE")
	}
	return u.String(), drop, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
