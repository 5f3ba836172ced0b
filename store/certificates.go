package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// GetCertificates reads certificates by id; missing ids are simply absent from the result.
func GetCertificates(ctx context.Context, q Querier, ids []string) ([]Certificate, error) {
	return collect(ctx, q, scanCertificate,
		`SELECT `+certificateCols+` FROM certificates WHERE id = ANY($1) ORDER BY id`, ids)
}

// LoadBalancersNamingCertificate returns the live load balancers whose settings name a
// certificate (they wait for it to be ready before the provider is asked).
func LoadBalancersNamingCertificate(ctx context.Context, q Querier, certificateID string) ([]string, error) {
	return collect(ctx, q, scanString,
		`SELECT c.load_balancer_id FROM load_balancer_certificates c JOIN load_balancers l ON l.id = c.load_balancer_id
		  WHERE c.certificate_id = $1 AND l.state NOT IN ('deleting', 'deleted') ORDER BY 1`, certificateID)
}

// GetCertificateForUpdate reads a certificate and locks its row for the transaction.
func GetCertificateForUpdate(ctx context.Context, q Querier, id string) (Certificate, error) {
	return one(ctx, q, scanCertificate, `SELECT `+certificateCols+` FROM certificates WHERE id = $1 FOR UPDATE`, id)
}

// Certificates queues the certificates named by ids and those load balancer of uses today.
func (r *Reads) Certificates(ids []string, of string, out *[]Certificate) {
	readAll(r, scanCertificate, out, r.shared(sqlTargetCertificates, sqlTargetCertificates+forShare), ids, of)
}

const sqlTargetCertificates = `SELECT ` + certificateCols + ` FROM certificates
		WHERE id IN (SELECT unnest($1::text[]) UNION SELECT certificate_id FROM load_balancer_certificates WHERE load_balancer_id = $2) ORDER BY id`

// Certificate is a row of certificates.
type Certificate struct {
	ID               string
	TenantID         string
	AccountID        string
	Name             string
	Kind             string
	DNSNames         []string
	PrivateKeySealed []byte
	LeafCertificate  string
	CertificateChain string
	State            string
	ProviderID       string
	LastError        string
	CreatedAt        time.Time
}

const certificateCols = `id, tenant_id, account_id, name, kind, dns_names, private_key_sealed, leaf_certificate,
	certificate_chain, state, provider_id, last_error, created_at`

func scanCertificate(r pgx.Row) (Certificate, error) {
	var c Certificate
	err := r.Scan(&c.ID, &c.TenantID, &c.AccountID, &c.Name, &c.Kind, &c.DNSNames, &c.PrivateKeySealed,
		&c.LeafCertificate, &c.CertificateChain, &c.State, &c.ProviderID, &c.LastError, &c.CreatedAt)
	return c, err
}

// InsertCertificate adds a certificate, pending.
func InsertCertificate(ctx context.Context, q Querier, c Certificate) (Certificate, error) {
	if c.DNSNames == nil {
		c.DNSNames = []string{}
	}
	return one(ctx, q, scanCertificate,
		`INSERT INTO certificates (id, tenant_id, account_id, name, kind, dns_names, private_key_sealed,
		        leaf_certificate, certificate_chain)
		 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING `+certificateCols,
		c.ID, c.TenantID, c.AccountID, c.Name, c.Kind, c.DNSNames, c.PrivateKeySealed, c.LeafCertificate, c.CertificateChain)
}

// GetCertificate reads a certificate by id alone.
func GetCertificate(ctx context.Context, q Querier, id string) (Certificate, error) {
	return one(ctx, q, scanCertificate, `SELECT `+certificateCols+` FROM certificates WHERE id = $1`, id)
}

// ListCertificates returns a tenant's certificates in creation order.
func ListCertificates(ctx context.Context, q Querier, tenantID string, p Page) ([]Certificate, error) {
	return collect(ctx, q, scanCertificate,
		`SELECT `+certificateCols+` FROM certificates WHERE tenant_id = $1 AND state <> 'deleted' AND ($2 = '' OR id > $2)
		  ORDER BY id LIMIT $3`, tenantID, p.afterID(), p.limit())
}

// SetCertificateState records a certificate's state.
func SetCertificateState(ctx context.Context, q Querier, id, state, providerID, lastError string) error {
	_, err := exec(ctx, q,
		`UPDATE certificates SET state = $2, provider_id = CASE WHEN $3 = '' THEN provider_id ELSE $3 END, last_error = $4,
		        deleted_at = CASE WHEN $2 = 'deleted' THEN now() ELSE deleted_at END WHERE id = $1`,
		id, state, providerID, lastError)
	return err
}

// CertificateInUse reports whether a load balancer not deleted names the certificate.
func CertificateInUse(ctx context.Context, q Querier, id string) (bool, error) {
	var n int
	err := q.QueryRow(ctx,
		`SELECT count(*) FROM load_balancer_certificates c JOIN load_balancers l ON l.id = c.load_balancer_id
		  WHERE c.certificate_id = $1 AND l.state <> 'deleted'`, id).Scan(&n)
	return n > 0, TranslateError(err)
}
