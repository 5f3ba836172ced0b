package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"better-compute.dev/compute/core"
	"better-compute.dev/compute/store"
)

// bootstrapAdmin makes the first platform admin (or, told so, another token for it) and prints
// the token on stdout once. Nothing is logged: the secret must not reach a log pipeline.
func bootstrapAdmin(ctx context.Context, args []string, env environment, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bootstrap-admin", flag.ContinueOnError)
	fs.SetOutput(stderr)
	name := fs.String("name", "platform-admin", "display name of the admin principal")
	additional := fs.Bool("additional", false, "the admin exists: mint another token for it")
	rotate := fs.Bool("rotate", false, "the admin exists: mint a new token and revoke its other tokens")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: bootstrap-admin takes no arguments", errUsage)
	}
	if *additional && *rotate {
		return fmt.Errorf("%w: --additional and --rotate exclude each other", errUsage)
	}
	db, err := openDB(ctx, env)
	if err != nil {
		return err
	}
	defer db.Close()
	if err := db.Migrate(ctx); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	var tok core.AdminToken
	if *additional || *rotate {
		tok, err = core.MintPlatformAdminToken(ctx, db, *rotate)
	} else {
		tok, err = core.BootstrapPlatformAdmin(ctx, db, *name)
		if errors.Is(err, core.ErrPlatformAdminExists) {
			return fmt.Errorf("%w; use --additional for another token or --rotate to replace its tokens", err)
		}
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "principal: %s\ntoken-id: %s\ntoken: %s\n", tok.PrincipalID, tok.TokenID, tok.Secret)
	for _, id := range tok.Revoked {
		fmt.Fprintf(stdout, "revoked: %s\n", id)
	}
	fmt.Fprintln(stderr, "bc-server: the token is shown once; store it now (it cannot be read back)")
	return nil
}

// revokeToken revokes one token by id (any principal's: the operator holds the database).
// Replicas stop accepting it within core.PrincipalCacheTTL.
func revokeToken(ctx context.Context, args []string, env environment, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("revoke-token", flag.ContinueOnError)
	fs.SetOutput(stderr)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("%w: revoke-token <token-id>", errUsage)
	}
	db, err := openDB(ctx, env)
	if err != nil {
		return err
	}
	defer db.Close()
	t, err := store.RevokeToken(ctx, db.Q(), fs.Arg(0))
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("token %s not found", fs.Arg(0))
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "revoked: %s (principal %s)\n", t.ID, t.PrincipalID)
	return nil
}

// parseFlags parses a subcommand's flags; a bad flag is a usage error, -h is help (exit 0).
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	return nil
}
