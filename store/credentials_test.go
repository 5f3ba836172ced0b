package store_test

import (
	"context"
	"testing"
	"time"

	"better-compute.dev/compute/store"
	"better-compute.dev/compute/store/storetest"
)

// TestCredentialVersionMovesWithEveryRevocation: the version replicas watch moves with every
// statement that revokes a token, in that statement, and with nothing else; AuthenticateToken
// reports the token's expiry so that a cache never outlives it.
func TestCredentialVersionMovesWithEveryRevocation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := storetest.New(t)
	q := db.Q()
	version := func() int64 {
		t.Helper()
		v, err := store.CredentialVersion(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	p, err := store.InsertPrincipal(ctx, q, store.Principal{ID: "prn_cred", Kind: "user", DisplayName: "cred"})
	if err != nil {
		t.Fatal(err)
	}
	expires := time.Now().Add(time.Hour).UTC().Truncate(time.Microsecond)
	token := func(id string, exp *time.Time) store.Token {
		t.Helper()
		tok, err := store.InsertToken(ctx, q, store.Token{ID: id, PrincipalID: p.ID, SecretHash: []byte("hash-" + id), ExpiresAt: exp})
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	a, b := token("tok_a", &expires), token("tok_b", nil)
	token("tok_c", nil)

	steps := []struct {
		reason string
		do     func() error
		moves  bool
	}{
		{"a token made", func() error { token("tok_d", nil); return nil }, false},
		{"a token authenticated", func() error {
			_, got, err := store.AuthenticateToken(ctx, q, a.SecretHash)
			if err == nil && !got.Equal(expires) {
				t.Errorf("AuthenticateToken reported expiry %v, want %v", got, expires)
			}
			return err
		}, false},
		{"a token revoked", func() error { _, err := store.RevokeToken(ctx, q, b.ID); return err }, true},
		{"the principal's other tokens revoked", func() error { _, err := store.RevokeOtherTokens(ctx, q, p.ID, a.ID); return err }, true},
		{"no other token left to revoke", func() error { _, err := store.RevokeOtherTokens(ctx, q, p.ID, a.ID); return err }, false},
	}
	for _, s := range steps {
		before := version()
		if err := s.do(); err != nil {
			t.Fatalf("%s: %v", s.reason, err)
		}
		if moved := version() != before; moved != s.moves {
			t.Errorf("%s: version moved = %v, want %v", s.reason, moved, s.moves)
		}
	}
	if _, _, err := store.AuthenticateToken(ctx, q, b.SecretHash); err == nil {
		t.Error("a revoked token still authenticates")
	}
}
