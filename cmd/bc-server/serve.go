package main

import (
	"context"
	"errors"
	"io"
	"time"

	"better-compute.dev/compute/app"
	"better-compute.dev/compute/store"
)

func serve(ctx context.Context, env environment, stderr io.Writer) error {
	cfg, err := parseConfig(env, true)
	if err != nil {
		return err
	}
	log := newLogger(stderr, cfg.LogLevel)
	cfg.App.Logger = log
	a, err := app.Start(ctx, cfg.App)
	if err != nil {
		return err
	}
	log.Info("serving", "url", a.URL, "replica", cfg.App.Replica)
	<-ctx.Done()
	log.Info("draining", "delay", cfg.App.DrainDelay.String())
	shutdown(a)
	return nil
}

func migrate(ctx context.Context, env environment) error {
	db, err := openDB(ctx, env)
	if err != nil {
		return err
	}
	defer db.Close()
	return db.Migrate(ctx)
}

// openDB opens BC_DATABASE_URL for the operator commands (migrate, bootstrap-admin,
// revoke-token), which need only the database.
func openDB(ctx context.Context, env environment) (*store.DB, error) {
	if env.get("BC_DATABASE_URL") == "" {
		return nil, errors.New("BC_DATABASE_URL: required")
	}
	cfg, err := parseConfig(env, false)
	if err != nil {
		return nil, err
	}
	return store.Open(ctx, cfg.App.DatabaseURL)
}

// shutdown drains and then finishes in-flight calls, within the drain delay plus 15 s.
func shutdown(a *app.App) {
	ctx, cancel := context.WithTimeout(context.Background(), a.Config.DrainDelay+15*time.Second)
	defer cancel()
	a.Close(ctx)
}
