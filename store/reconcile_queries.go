package store

import "context"

// Queries of the vps.provider-resources reconciler that the domain files do not have: which
// resources wait on a subnet, a certificate or a regional load balancer, so that the write that
// makes one ready can queue its waiters at once instead of leaving them to poll.

// GetCertificates reads certificates by id; missing ids are simply absent from the result.
func GetCertificates(ctx context.Context, q Querier, ids []string) ([]Certificate, error) {
	return collect(ctx, q, scanCertificate,
		`SELECT `+certificateCols+` FROM certificates WHERE id = ANY($1) ORDER BY id`, ids)
}

// SubnetWaiters returns the ids of the instances and load balancers on a subnet that have not
// reached the provider yet (they wait for its VPC).
func SubnetWaiters(ctx context.Context, q Querier, subnetID string) ([]string, error) {
	return collect(ctx, q, scanString,
		`SELECT id FROM instances WHERE subnet_id = $1 AND state = 'pending'
		 UNION
		 SELECT id FROM load_balancers WHERE subnet_id = $1 AND state NOT IN ('deleting', 'deleted')
		 ORDER BY 1`, subnetID)
}

// LoadBalancersNamingCertificate returns the live load balancers whose settings name a
// certificate (they wait for it to be ready before the provider is asked).
func LoadBalancersNamingCertificate(ctx context.Context, q Querier, certificateID string) ([]string, error) {
	return collect(ctx, q, scanString,
		`SELECT c.load_balancer_id FROM load_balancer_certificates c JOIN load_balancers l ON l.id = c.load_balancer_id
		  WHERE c.certificate_id = $1 AND l.state NOT IN ('deleting', 'deleted') ORDER BY 1`, certificateID)
}

// GetInstanceForUpdate reads an instance and locks its row for the transaction.
func GetInstanceForUpdate(ctx context.Context, q Querier, id string) (Instance, error) {
	return one(ctx, q, scanInstance, `SELECT `+instanceCols+` FROM instances WHERE id = $1 FOR UPDATE`, id)
}

// GetSubnetForUpdate reads a subnet and locks its row for the transaction.
func GetSubnetForUpdate(ctx context.Context, q Querier, id string) (Subnet, error) {
	return one(ctx, q, scanSubnet, `SELECT `+subnetCols+` FROM subnets WHERE id = $1 FOR UPDATE`, id)
}

// GetCertificateForUpdate reads a certificate and locks its row for the transaction.
func GetCertificateForUpdate(ctx context.Context, q Querier, id string) (Certificate, error) {
	return one(ctx, q, scanCertificate, `SELECT `+certificateCols+` FROM certificates WHERE id = $1 FOR UPDATE`, id)
}
