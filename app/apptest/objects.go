package apptest

import (
	"testing"

	"google.golang.org/protobuf/proto"

	v1 "better-compute.dev/compute/gen/go/bettercompute/compute/v1"
)

// ObjectOfEveryKind makes, as tn, one object of every kind a request can name by id, each called
// name, and answers their ids by the request field that names them ("load_balancer_id",
// "node_id", ...), the tenant's pool, account and principal included. Tests that walk every
// procedure fill the id fields from it.
func (s *Stack) ObjectOfEveryKind(t testing.TB, tn Tenant, name string) map[string]string {
	t.Helper()
	svc := s.App
	ids := map[string]string{"pool_id": tn.PoolID, "account_id": tn.AccountID, "principal_id": tn.PrincipalID}
	must := func(id string, err error) string {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	p, err := svc.Tenancy.CreateProject(tn.Ctx, &v1.CreateProjectRequest{TenantId: tn.ID, Name: name})
	ids["project_id"] = must(p.GetId(), err)
	n, err := svc.Resources.CreateNetwork(tn.Ctx, &v1.CreateNetworkRequest{TenantId: tn.ID, AccountId: tn.AccountID, Name: name})
	ids["network_id"] = must(n.GetId(), err)
	sn, err := svc.Resources.CreateSubnet(tn.Ctx, &v1.CreateSubnetRequest{TenantId: tn.ID, NetworkId: n.GetId(), Name: name, Region: "nyc3", IpRange: "10.7.0.0/24"})
	ids["subnet_id"] = must(sn.GetId(), err)
	lb, err := svc.LoadBalancers.CreateLoadBalancer(tn.Ctx, &v1.CreateLoadBalancerRequest{TenantId: tn.ID, PoolId: tn.PoolID, Name: name, Region: "nyc3",
		Targets:    &v1.LoadBalancerTargets{Pool: proto.Bool(true)},
		Forwarding: []*v1.ForwardingRule{{EntryProtocol: "http", EntryPort: 80, TargetProtocol: "http", TargetPort: 8080}}})
	ids["load_balancer_id"] = must(lb.GetId(), err)
	ids["instance_id"] = s.MachineInstance(t, tn, "nyc3", "").GetId()
	cert, err := svc.Resources.CreateCertificate(tn.Ctx, &v1.CreateCertificateRequest{TenantId: tn.ID, AccountId: tn.AccountID, Name: name,
		Source: &v1.CreateCertificateRequest_Managed{Managed: &v1.ManagedCertificate{DnsNames: []string{name + ".example.com"}}}})
	ids["certificate_id"] = must(cert.GetId(), err)
	tok, _, err := svc.Tenancy.CreateToken(tn.Ctx, &v1.CreateTokenRequest{TenantId: tn.ID, PrincipalId: tn.PrincipalID})
	ids["token_id"] = must(tok.GetId(), err)
	node, err := svc.Metal.EnrollNode(tn.Ctx, &v1.EnrollNodeRequest{TenantId: tn.ID, Name: name, Bmc: &v1.MetalBmcSettings{
		Address: "192.0.2.10", Protocol: "redfish", Username: "u", Password: "p", InsecureTls: true}})
	ids["node_id"] = must(node.GetId(), err)
	return ids
}
