package store

import "context"

// PlatformAdminID returns the principal the first platform bootstrap recorded, else the oldest
// platform admin principal (one made before the record existed, or by dev mode); ErrNotFound
// when there is none.
func PlatformAdminID(ctx context.Context, q Querier) (string, error) {
	return one(ctx, q, scanString,
		`SELECT id FROM (
		   SELECT principal_id AS id, 0 AS rank, created_at FROM platform_bootstrap WHERE id = 1
		   UNION ALL
		   SELECT id, 1 AS rank, created_at FROM principals WHERE platform_admin AND tenant_id IS NULL
		 ) AS admins ORDER BY rank, created_at, id LIMIT 1`)
}

// ClaimPlatformBootstrap records principalID as the bootstrap admin unless one is recorded
// already; false means another bootstrap won (the caller rolls back its principal).
func ClaimPlatformBootstrap(ctx context.Context, q Querier, principalID string) (bool, error) {
	n, err := exec(ctx, q,
		`INSERT INTO platform_bootstrap (id, principal_id) VALUES (1, $1) ON CONFLICT (id) DO NOTHING`, principalID)
	return n == 1, err
}

// RevokeOtherTokens revokes the principal's live tokens except keepID, returns their ids and
// raises the credential version when it revoked any.
func RevokeOtherTokens(ctx context.Context, q Querier, principalID, keepID string) ([]string, error) {
	return collect(ctx, q, scanString,
		`WITH taken AS (
		   UPDATE tokens SET revoked_at = now()
		    WHERE principal_id = $1 AND id <> $2 AND revoked_at IS NULL
		    RETURNING id
		 ), `+bumpCredentialChanges+`
		 SELECT id FROM taken`+credentialBumped, principalID, keepID)
}
