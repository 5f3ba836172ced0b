// Command bc-server runs the Better Compute control plane.
//
//	bc-server serve     run a replica (configuration from BC_* environment variables)
//	bc-server migrate   apply the database migrations and exit
//	bc-server dev       run everything on embedded defaults: local PostgreSQL, the OpenFGA engine
//	                    in process, the DigitalOcean simulator in process; prints the address and
//	                    a bootstrap admin token
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: bc-server serve|migrate|dev [flags]")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: logLevel()}))
	var err error
	switch os.Args[1] {
	case "serve":
		err = serve(ctx, log)
	case "migrate":
		err = migrate(ctx)
	case "dev":
		err = dev(ctx, log, os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bc-server:", err)
		os.Exit(1)
	}
}

func logLevel() slog.Level {
	var l slog.Level
	if err := l.UnmarshalText([]byte(os.Getenv("BC_LOG_LEVEL"))); err != nil {
		return slog.LevelInfo
	}
	return l
}
