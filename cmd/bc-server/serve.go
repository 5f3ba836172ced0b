package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"better-compute.dev/compute/app"
	"better-compute.dev/compute/netguard"
	"better-compute.dev/compute/store"
)

// configFromEnv reads a replica's configuration. Secrets come only from the environment.
func configFromEnv(log *slog.Logger) (app.Config, error) {
	cfg := app.Config{
		Listen:           env("BC_LISTEN", ":8080"),
		DatabaseURL:      os.Getenv("BC_DATABASE_URL"),
		SealKey:          os.Getenv("BC_SEAL_KEY"),
		CORSOrigins:      strings.Split(env("BC_CORS_ORIGINS", "*"), ","),
		OpenFGAURL:       os.Getenv("BC_OPENFGA_URL"),
		OpenFGAStore:     os.Getenv("BC_OPENFGA_STORE"),
		OpenFGAToken:     os.Getenv("BC_OPENFGA_TOKEN"),
		OpenFGADatastore: env("BC_OPENFGA_DATASTORE", "postgres"),
		Reconcile:        env("BC_RECONCILE", "true") == "true",
		Replica:          env("BC_REPLICA", hostname()),
		Logger:           log,
	}
	allow, err := netguard.ParseAllow(os.Getenv("BC_OUTBOUND_ALLOW"))
	if err != nil {
		return cfg, fmt.Errorf("BC_OUTBOUND_ALLOW: %w", err)
	}
	cfg.OutboundAllow = allow
	if v := os.Getenv("BC_BODY_READ_TIMEOUT"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return cfg, fmt.Errorf("BC_BODY_READ_TIMEOUT: %q is not a positive duration", v)
		}
		cfg.BodyReadTimeout = d
	}
	if v := os.Getenv("BC_MAX_CONNECTIONS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			return cfg, fmt.Errorf("BC_MAX_CONNECTIONS: %q is not a positive integer", v)
		}
		cfg.MaxConnections = n
	}
	if cfg.DatabaseURL == "" || cfg.SealKey == "" {
		return cfg, errors.New("BC_DATABASE_URL and BC_SEAL_KEY are required")
	}
	return cfg, nil
}

func serve(ctx context.Context, log *slog.Logger) error {
	cfg, err := configFromEnv(log)
	if err != nil {
		return err
	}
	a, err := app.Start(ctx, cfg)
	if err != nil {
		return err
	}
	log.Info("serving", "url", a.URL, "replica", cfg.Replica)
	<-ctx.Done()
	shutdown(a)
	return nil
}

func migrate(ctx context.Context) error {
	url := os.Getenv("BC_DATABASE_URL")
	if url == "" {
		return errors.New("BC_DATABASE_URL is required")
	}
	db, err := store.Open(ctx, url)
	if err != nil {
		return err
	}
	defer db.Close()
	return db.Migrate(ctx)
}

// shutdown drains in-flight calls for up to 15 s.
func shutdown(a *app.App) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	a.Close(ctx)
}

func env(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func hostname() string {
	h, err := os.Hostname()
	if err != nil {
		return "bc-server"
	}
	return h
}
