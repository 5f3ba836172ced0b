package pools

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"

	"better-compute.dev/compute/apierr"
	"better-compute.dev/compute/contract"
	"better-compute.dev/compute/core"
	v1 "better-compute.dev/compute/gen/go/bettercompute/compute/v1"
	"better-compute.dev/compute/ids"
	"better-compute.dev/compute/lifecycle"
	"better-compute.dev/compute/seal"
	"better-compute.dev/compute/store"
)

// joinTokenPrefix marks join tokens, so one found in a log or a paste is recognisable.
const joinTokenPrefix = "bcj_"

// followSubstrate keeps a pool's substrate row in step with the pool, inside the transaction
// that creates the pool or changes its policy or state: it records the substrate (pending,
// with a fresh join token) when the policy first names one, revives a torn-down one, and
// queues the kubernetes.substrates reconciler, which reads the pool and converges. A policy
// without a substrate on a pool that never had one changes nothing.
func (s *Service) followSubstrate(ctx context.Context, tx store.Tx, p store.Pool, policy *v1.PoolPolicy) error {
	want := policy.GetSubstrate()
	live := want != nil && p.State != "archived"
	if live {
		if _, err := core.TenantAccount(ctx, tx, p.TenantID, want.GetAccount()); err != nil {
			return err
		}
	}
	sub, err := store.GetSubstrateByPoolForUpdate(ctx, tx, p.ID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		if !live {
			return nil
		}
		id := ids.New(ids.Substrate)
		hash, sealed, err := s.newJoinToken(id)
		if err != nil {
			return err
		}
		row, err := store.InsertSubstrate(ctx, tx, store.Substrate{
			ID: id, TenantID: p.TenantID, PoolID: p.ID, JoinTokenHash: hash, JoinTokenSealed: sealed,
		})
		if err != nil {
			return err
		}
		if err := contract.AppendSubstrateEvent(ctx, tx, row, lifecycle.EventSubstrateCreated); err != nil {
			return err
		}
	case err != nil:
		return err
	case live && sub.State == "deleted":
		hash, sealed, err := s.newJoinToken(sub.ID)
		if err != nil {
			return err
		}
		row, err := store.ReviveSubstrate(ctx, tx, sub.ID, hash, sealed)
		if err != nil {
			return err
		}
		if err := contract.AppendSubstrateEvent(ctx, tx, row, lifecycle.EventSubstrateCreated); err != nil {
			return err
		}
	}
	return store.Enqueue(ctx, tx, contract.SubstrateKind, p.ID, nil)
}

// newJoinToken makes a join token for a substrate and returns its SHA-256 and the token sealed
// to the substrate id. The token itself leaves this function only sealed.
func (s *Service) newJoinToken(substrateID string) (hash, sealed []byte, err error) {
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return nil, nil, apierr.InternalErr(err)
	}
	token := joinTokenPrefix + base64.RawURLEncoding.EncodeToString(raw[:])
	digest := sha256.Sum256([]byte(token))
	box, err := s.base.Keyring.SealSecret(seal.Secret(token), []byte(substrateID))
	if err != nil {
		return nil, nil, apierr.InternalErr(err)
	}
	return digest[:], []byte(box), nil
}
