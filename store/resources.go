package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// Network is a row of networks.
type Network struct {
	ID        string
	TenantID  string
	AccountID string
	Name      string
	CreatedAt time.Time
}

func scanNetwork(r pgx.Row) (Network, error) {
	var n Network
	err := r.Scan(&n.ID, &n.TenantID, &n.AccountID, &n.Name, &n.CreatedAt)
	return n, err
}

// InsertNetwork adds a network.
func InsertNetwork(ctx context.Context, q Querier, n Network) (Network, error) {
	return one(ctx, q, scanNetwork,
		`INSERT INTO networks (id, tenant_id, account_id, name) VALUES ($1, $2, $3, $4)
		 RETURNING id, tenant_id, account_id, name, created_at`, n.ID, n.TenantID, n.AccountID, n.Name)
}

// GetNetwork reads a network by id alone.
func GetNetwork(ctx context.Context, q Querier, id string) (Network, error) {
	return one(ctx, q, scanNetwork, `SELECT id, tenant_id, account_id, name, created_at FROM networks WHERE id = $1`, id)
}

// ListNetworks returns a tenant's networks in creation order (ids are time-ordered), from after p.
func ListNetworks(ctx context.Context, q Querier, tenantID string, p Page) ([]Network, error) {
	return collect(ctx, q, scanNetwork,
		`SELECT id, tenant_id, account_id, name, created_at FROM networks WHERE tenant_id = $1 AND ($2 = '' OR id > $2)
		  ORDER BY id LIMIT $3`, tenantID, p.afterID(), p.limit())
}

// Subnet is a row of subnets.
type Subnet struct {
	ID         string
	TenantID   string
	NetworkID  string
	AccountID  string
	Name       string
	Region     string
	IPRange    string
	State      string
	ProviderID string
	LastError  string
	CreatedAt  time.Time
}

const subnetCols = `id, tenant_id, network_id, account_id, name, region, ip_range, state, provider_id, last_error, created_at`

func scanSubnet(r pgx.Row) (Subnet, error) {
	var s Subnet
	err := r.Scan(&s.ID, &s.TenantID, &s.NetworkID, &s.AccountID, &s.Name, &s.Region, &s.IPRange, &s.State,
		&s.ProviderID, &s.LastError, &s.CreatedAt)
	return s, err
}

// InsertSubnet adds a subnet, pending.
func InsertSubnet(ctx context.Context, q Querier, s Subnet) (Subnet, error) {
	return one(ctx, q, scanSubnet,
		`INSERT INTO subnets (id, tenant_id, network_id, account_id, name, region, ip_range)
		 VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING `+subnetCols,
		s.ID, s.TenantID, s.NetworkID, s.AccountID, s.Name, s.Region, s.IPRange)
}

// GetSubnet reads a subnet by id alone.
func GetSubnet(ctx context.Context, q Querier, id string) (Subnet, error) {
	return one(ctx, q, scanSubnet, sqlGetSubnet, id)
}

const sqlGetSubnet = `SELECT ` + subnetCols + ` FROM subnets WHERE id = $1`

// ListSubnets returns a tenant's subnets in creation order, optionally of one network.
func ListSubnets(ctx context.Context, q Querier, tenantID, networkID string, p Page) ([]Subnet, error) {
	return collect(ctx, q, scanSubnet,
		`SELECT `+subnetCols+` FROM subnets WHERE tenant_id = $1 AND ($2 = '' OR network_id = $2)
		  AND state <> 'deleted' AND ($3 = '' OR id > $3) ORDER BY id LIMIT $4`, tenantID, networkID, p.afterID(), p.limit())
}

// SetSubnetState records a subnet's state as the reconciler or a verb sets it.
func SetSubnetState(ctx context.Context, q Querier, id, state, providerID, lastError string) error {
	_, err := exec(ctx, q,
		`UPDATE subnets SET state = $2, provider_id = CASE WHEN $3 = '' THEN provider_id ELSE $3 END, last_error = $4,
		        deleted_at = CASE WHEN $2 = 'deleted' THEN now() ELSE deleted_at END WHERE id = $1`,
		id, state, providerID, lastError)
	return err
}

// SubnetInUse reports whether a live instance or load balancer is on the subnet.
func SubnetInUse(ctx context.Context, q Querier, id string) (bool, error) {
	var n int
	err := q.QueryRow(ctx,
		`SELECT (SELECT count(*) FROM instances WHERE subnet_id = $1 AND state NOT IN ('deleting', 'deleted'))
		      + (SELECT count(*) FROM load_balancers WHERE subnet_id = $1 AND state <> 'deleted')`, id).Scan(&n)
	return n > 0, TranslateError(err)
}

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

// Instance is a row of instances.
type Instance struct {
	ID        string
	TenantID  string
	ProjectID string
	PoolID    string
	AccountID string
	Name      string
	Region    string
	SubnetID  string
	Flavor    string
	MachineID string
	State     string
	LastError string
	CreatedAt time.Time
}

const instanceCols = `id, tenant_id, coalesce(project_id, ''), pool_id, account_id, name, region, coalesce(subnet_id, ''),
	flavor, machine_id, state, last_error, created_at`

func scanInstance(r pgx.Row) (Instance, error) {
	var i Instance
	err := r.Scan(&i.ID, &i.TenantID, &i.ProjectID, &i.PoolID, &i.AccountID, &i.Name, &i.Region, &i.SubnetID,
		&i.Flavor, &i.MachineID, &i.State, &i.LastError, &i.CreatedAt)
	return i, err
}

// InsertInstance adds an instance, pending.
func InsertInstance(ctx context.Context, q Querier, i Instance) (Instance, error) {
	return one(ctx, q, scanInstance,
		`INSERT INTO instances (id, tenant_id, project_id, pool_id, account_id, name, region, subnet_id, flavor)
		 VALUES ($1, $2, nullif($3, ''), $4, $5, $6, $7, nullif($8, ''), $9) RETURNING `+instanceCols,
		i.ID, i.TenantID, i.ProjectID, i.PoolID, i.AccountID, i.Name, i.Region, i.SubnetID, i.Flavor)
}

// GetInstance reads an instance by id alone.
func GetInstance(ctx context.Context, q Querier, id string) (Instance, error) {
	return one(ctx, q, scanInstance, `SELECT `+instanceCols+` FROM instances WHERE id = $1`, id)
}

// GetInstances reads instances by id; missing ids are simply absent from the result.
func GetInstances(ctx context.Context, q Querier, ids []string) ([]Instance, error) {
	return collect(ctx, q, scanInstance, `SELECT `+instanceCols+` FROM instances WHERE id = ANY($1) ORDER BY id`, ids)
}

// ListInstances returns a tenant's instances in creation order.
func ListInstances(ctx context.Context, q Querier, tenantID, poolID string, includeDeleted bool, p Page) ([]Instance, error) {
	return collect(ctx, q, scanInstance,
		`SELECT `+instanceCols+` FROM instances WHERE tenant_id = $1 AND ($2 = '' OR pool_id = $2)
		  AND ($3 OR state <> 'deleted') AND ($4 = '' OR id > $4) ORDER BY id LIMIT $5`,
		tenantID, poolID, includeDeleted, p.afterID(), p.limit())
}

// PoolInstances returns the instances a { pool: true } load balancer reaches: the tenant's, in the
// pool and region, on the subnet (or, with subnetID empty, on no tenant network), with a machine
// and not being deleted.
func PoolInstances(ctx context.Context, q Querier, tenantID, poolID, region, subnetID string) ([]Instance, error) {
	return collect(ctx, q, scanInstance,
		`SELECT `+instanceCols+` FROM instances
		  WHERE tenant_id = $1 AND pool_id = $2 AND region = $3 AND coalesce(subnet_id, '') = $4
		    AND machine_id <> '' AND state NOT IN ('deleting', 'deleted') ORDER BY id`,
		tenantID, poolID, region, subnetID)
}

// SetInstanceState records an instance's state and machine.
func SetInstanceState(ctx context.Context, q Querier, id, state, machineID, lastError string) error {
	_, err := exec(ctx, q,
		`UPDATE instances SET state = $2, machine_id = CASE WHEN $3 = '' THEN machine_id ELSE $3 END, last_error = $4,
		        deleted_at = CASE WHEN $2 = 'deleted' THEN now() ELSE deleted_at END WHERE id = $1`,
		id, state, machineID, lastError)
	return err
}
