package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// Tenant is a row of tenants.
type Tenant struct {
	ID          string
	DisplayName string
	CreatedAt   time.Time
}

func scanTenant(r pgx.Row) (Tenant, error) {
	var t Tenant
	err := r.Scan(&t.ID, &t.DisplayName, &t.CreatedAt)
	return t, err
}

// InsertTenant adds a tenant; an existing id is ErrConflict.
func InsertTenant(ctx context.Context, q Querier, t Tenant) (Tenant, error) {
	return one(ctx, q, scanTenant,
		`INSERT INTO tenants (id, display_name) VALUES ($1, $2) RETURNING id, display_name, created_at`,
		t.ID, t.DisplayName)
}

// GetTenant reads a tenant.
func GetTenant(ctx context.Context, q Querier, id string) (Tenant, error) {
	return one(ctx, q, scanTenant, `SELECT id, display_name, created_at FROM tenants WHERE id = $1`, id)
}

// ListTenants returns every tenant in creation order.
func ListTenants(ctx context.Context, q Querier, p Page) ([]Tenant, error) {
	return collect(ctx, q, scanTenant, `SELECT id, display_name, created_at FROM tenants
		  WHERE ($1 = '' OR (created_at, id) > ($2::TIMESTAMPTZ, $1::TEXT)) ORDER BY created_at, id LIMIT $3`,
		p.afterID(), p.afterTime(), p.limit())
}

// Principal is a row of principals. TenantID is empty for platform principals.
type Principal struct {
	ID            string
	TenantID      string
	Kind          string
	DisplayName   string
	PlatformAdmin bool
	CreatedAt     time.Time
}

const principalCols = `id, coalesce(tenant_id, ''), kind, display_name, platform_admin, created_at`

func scanPrincipal(r pgx.Row) (Principal, error) {
	var p Principal
	err := r.Scan(&p.ID, &p.TenantID, &p.Kind, &p.DisplayName, &p.PlatformAdmin, &p.CreatedAt)
	return p, err
}

// InsertPrincipal adds a principal.
func InsertPrincipal(ctx context.Context, q Querier, p Principal) (Principal, error) {
	return one(ctx, q, scanPrincipal,
		`INSERT INTO principals (id, tenant_id, kind, display_name, platform_admin)
		 VALUES ($1, nullif($2, ''), $3, $4, $5) RETURNING `+principalCols,
		p.ID, p.TenantID, p.Kind, p.DisplayName, p.PlatformAdmin)
}

// GetPrincipal reads a principal.
func GetPrincipal(ctx context.Context, q Querier, id string) (Principal, error) {
	return one(ctx, q, scanPrincipal, `SELECT `+principalCols+` FROM principals WHERE id = $1`, id)
}

// ListPrincipals returns a tenant's principals in creation order.
func ListPrincipals(ctx context.Context, q Querier, tenantID string, p Page) ([]Principal, error) {
	return collect(ctx, q, scanPrincipal,
		`SELECT `+principalCols+` FROM principals WHERE tenant_id = $1 AND ($2 = '' OR id > $2)
		  ORDER BY id LIMIT $3`, tenantID, p.afterID(), p.limit())
}

// Token is a row of tokens (never the secret).
type Token struct {
	ID          string
	PrincipalID string
	SecretHash  []byte
	ExpiresAt   *time.Time
	RevokedAt   *time.Time
	CreatedAt   time.Time
}

const tokenCols = `id, principal_id, secret_hash, expires_at, revoked_at, created_at`

func scanToken(r pgx.Row) (Token, error) {
	var t Token
	err := r.Scan(&t.ID, &t.PrincipalID, &t.SecretHash, &t.ExpiresAt, &t.RevokedAt, &t.CreatedAt)
	return t, err
}

// InsertToken adds a token by its secret's hash.
func InsertToken(ctx context.Context, q Querier, t Token) (Token, error) {
	return one(ctx, q, scanToken,
		`INSERT INTO tokens (id, principal_id, secret_hash, expires_at) VALUES ($1, $2, $3, $4) RETURNING `+tokenCols,
		t.ID, t.PrincipalID, t.SecretHash, t.ExpiresAt)
}

// GetToken reads a token by id.
func GetToken(ctx context.Context, q Querier, id string) (Token, error) {
	return one(ctx, q, scanToken, `SELECT `+tokenCols+` FROM tokens WHERE id = $1`, id)
}

// AuthenticateToken returns the principal a live token (not revoked, not expired) belongs to, and
// when the token expires (zero when it does not).
func AuthenticateToken(ctx context.Context, q Querier, secretHash []byte) (Principal, time.Time, error) {
	var p Principal
	var expires *time.Time
	err := q.QueryRow(ctx,
		`SELECT p.id, coalesce(p.tenant_id, ''), p.kind, p.display_name, p.platform_admin, p.created_at, t.expires_at
		   FROM tokens t JOIN principals p ON p.id = t.principal_id
		  WHERE t.secret_hash = $1 AND t.revoked_at IS NULL AND (t.expires_at IS NULL OR t.expires_at > now())`,
		secretHash).Scan(&p.ID, &p.TenantID, &p.Kind, &p.DisplayName, &p.PlatformAdmin, &p.CreatedAt, &expires)
	if err != nil {
		return Principal{}, time.Time{}, TranslateError(err)
	}
	if expires == nil {
		return p, time.Time{}, nil
	}
	return p, *expires, nil
}

// bumpCredentialChanges is the common table expression a statement that takes a credential back
// carries, so that the version replicas watch (CredentialVersion) moves in the same transaction;
// it moves only when the statement changed a row of taken (the statement's own expression). The
// statement reads bump (credentialBumped) so that no engine may skip it.
const bumpCredentialChanges = `bump AS (
	UPDATE credential_changes SET version = version + 1 WHERE id = 1 AND EXISTS (SELECT 1 FROM taken) RETURNING version)`

// credentialBumped is joined to a statement's rows to make it read bump (one row, always).
const credentialBumped = ` CROSS JOIN (SELECT count(*) FROM bump) AS bumped`

// CredentialVersion reads the version every revocation raises (migration 0085).
func CredentialVersion(ctx context.Context, q Querier) (int64, error) {
	return one(ctx, q, scanInt64, `SELECT version FROM credential_changes WHERE id = 1`)
}

func scanInt64(r pgx.Row) (int64, error) {
	var v int64
	err := r.Scan(&v)
	return v, err
}

// RevokeToken marks a token revoked (idempotent) and raises the credential version.
func RevokeToken(ctx context.Context, q Querier, id string) (Token, error) {
	return one(ctx, q, scanToken,
		`WITH taken AS (
		   UPDATE tokens SET revoked_at = coalesce(revoked_at, now()) WHERE id = $1 RETURNING `+tokenCols+`
		 ), `+bumpCredentialChanges+`
		 SELECT `+tokenCols+` FROM taken`+credentialBumped, id)
}

// Project is a row of projects.
type Project struct {
	ID        string
	TenantID  string
	Name      string
	CreatedAt time.Time
}

func scanProject(r pgx.Row) (Project, error) {
	var p Project
	err := r.Scan(&p.ID, &p.TenantID, &p.Name, &p.CreatedAt)
	return p, err
}

// InsertProject adds a project; a taken name is ErrConflict.
func InsertProject(ctx context.Context, q Querier, p Project) (Project, error) {
	return one(ctx, q, scanProject,
		`INSERT INTO projects (id, tenant_id, name) VALUES ($1, $2, $3) RETURNING id, tenant_id, name, created_at`,
		p.ID, p.TenantID, p.Name)
}

// GetProject reads a project of a tenant.
func GetProject(ctx context.Context, q Querier, tenantID, id string) (Project, error) {
	return one(ctx, q, scanProject, sqlGetProject, tenantID, id)
}

const sqlGetProject = `SELECT id, tenant_id, name, created_at FROM projects WHERE tenant_id = $1 AND id = $2`

// ListProjects returns a tenant's projects in creation order.
func ListProjects(ctx context.Context, q Querier, tenantID string, p Page) ([]Project, error) {
	return collect(ctx, q, scanProject,
		`SELECT id, tenant_id, name, created_at FROM projects WHERE tenant_id = $1 AND ($2 = '' OR id > $2)
		  ORDER BY id LIMIT $3`, tenantID, p.afterID(), p.limit())
}

// Project queues GetProject.
func (r *Reads) Project(tenantID, id string, out *Project, found *error) {
	readOne(r, scanProject, out, found, r.shared(sqlGetProject, sqlGetProject+forShare), tenantID, id)
}
