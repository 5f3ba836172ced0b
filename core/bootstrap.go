package core

import (
	"context"
	"errors"
	"fmt"

	"better-compute.dev/compute/ids"
	"better-compute.dev/compute/store"
)

// ErrPlatformAdminExists: a first platform admin was asked for, but one exists already.
var ErrPlatformAdminExists = errors.New("a platform admin exists already")

// AdminToken is a platform admin's newly minted token. Secret is shown to the operator once and
// is never logged or stored (only its hash is).
type AdminToken struct {
	PrincipalID string
	TokenID     string
	Secret      string
	// Revoked lists the tokens a rotation revoked.
	Revoked []string
}

// BootstrapPlatformAdmin makes the first platform admin and its token in one transaction. When
// a platform admin exists it fails with ErrPlatformAdminExists and writes nothing; concurrent
// calls against one database make exactly one admin (the bootstrap row's fixed key decides, and
// the serializable transaction retries a loser that read no admin). The OpenFGA grant is
// written by the first replica that authenticates the token.
func BootstrapPlatformAdmin(ctx context.Context, db *store.DB, name string) (AdminToken, error) {
	var out AdminToken
	err := store.ExecuteTx(ctx, db, func(tx store.Tx) error {
		out = AdminToken{}
		if id, err := store.PlatformAdminID(ctx, tx); err == nil {
			return fmt.Errorf("%w (%s)", ErrPlatformAdminExists, id)
		} else if !errors.Is(err, store.ErrNotFound) {
			return err
		}
		p, err := store.InsertPrincipal(ctx, tx, store.Principal{ID: ids.New(ids.Principal), Kind: "serviceAccount", DisplayName: name, PlatformAdmin: true})
		if err != nil {
			return err
		}
		won, err := store.ClaimPlatformBootstrap(ctx, tx, p.ID)
		if err != nil {
			return err
		}
		if !won {
			return ErrPlatformAdminExists
		}
		out.PrincipalID = p.ID
		out.TokenID, out.Secret, err = mintToken(ctx, tx, p.ID)
		return err
	})
	if err != nil {
		return AdminToken{}, err
	}
	return out, nil
}

// MintPlatformAdminToken adds a token to the bootstrap platform admin; with rotate, every other
// live token of that admin is revoked in the same transaction.
func MintPlatformAdminToken(ctx context.Context, db *store.DB, rotate bool) (AdminToken, error) {
	var out AdminToken
	err := store.ExecuteTx(ctx, db, func(tx store.Tx) error {
		out = AdminToken{}
		id, err := store.PlatformAdminID(ctx, tx)
		if errors.Is(err, store.ErrNotFound) {
			return errors.New("no platform admin yet: run bootstrap-admin without flags first")
		}
		if err != nil {
			return err
		}
		out.PrincipalID = id
		if out.TokenID, out.Secret, err = mintToken(ctx, tx, id); err != nil {
			return err
		}
		if rotate {
			out.Revoked, err = store.RevokeOtherTokens(ctx, tx, id, out.TokenID)
		}
		return err
	})
	if err != nil {
		return AdminToken{}, err
	}
	return out, nil
}

func mintToken(ctx context.Context, tx store.Tx, principalID string) (id, secret string, err error) {
	secret = NewSecret()
	t, err := store.InsertToken(ctx, tx, store.Token{ID: ids.New(ids.Token), PrincipalID: principalID, SecretHash: HashSecret(secret)})
	if err != nil {
		return "", "", err
	}
	return t.ID, secret, nil
}
