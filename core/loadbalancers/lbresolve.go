package loadbalancers

import (
	"context"
	"slices"
	"strconv"

	"better-compute.dev/compute/apierr"
	"better-compute.dev/compute/authz"
	"better-compute.dev/compute/core"
	v1 "better-compute.dev/compute/gen/go/bettercompute/compute/v1"
	"better-compute.dev/compute/gen/go/bettercompute/compute/v1/errcode"
	"better-compute.dev/compute/store"
)

// lbPlacement is what a load balancer's scope, region, pool and subnet fix at create time.
type lbPlacement struct {
	TenantID  string
	Scope     string
	Region    string
	SubnetID  string // "" = the account's default network
	AccountID string
	PoolID    string
	// SubnetFixed: the subnet is settled (update, or create with subnetId): named instances must be
	// on it. Otherwise (create without subnetId) the instances' shared subnet becomes the subnet.
	SubnetFixed bool
}

// lbRows are the rows a load balancer create or update decides on, read in its first round trip
// (store.ExecuteTwoTrips): the instances, regional load balancers and certificates the request
// and, for an update, the stored settings name.
type lbRows struct {
	instances map[string]store.Instance
	lbs       map[string]store.LoadBalancer
	certs     map[string]store.Certificate
}

// lbRowReads queues the reads of lbRows: those named by t, rules and domains, and those the load
// balancer of (update; "" on create) refers to today. It returns what to fill them from.
func lbRowReads(r *store.Reads, of string, t *v1.LoadBalancerTargets, rules []*v1.ForwardingRule, domains []*v1.Domain) func() lbRows {
	var instances []store.Instance
	var lbs []store.LoadBalancer
	var certs []store.Certificate
	if len(t.GetInstanceIds()) > 0 || of != "" {
		r.Instances(t.GetInstanceIds(), of, &instances)
	}
	if len(t.GetLoadBalancerIds()) > 0 || of != "" {
		r.LoadBalancers(t.GetLoadBalancerIds(), of, &lbs)
	}
	var certIDs []string
	for _, c := range certificateRefs(rules, domains) {
		certIDs = append(certIDs, c.id)
	}
	if len(certIDs) > 0 || of != "" {
		r.Certificates(certIDs, of, &certs)
	}
	return func() lbRows {
		rows := lbRows{instances: map[string]store.Instance{}, lbs: map[string]store.LoadBalancer{}, certs: map[string]store.Certificate{}}
		for _, x := range instances {
			rows.instances[x.ID] = x
		}
		for _, x := range lbs {
			rows.lbs[x.ID] = x
		}
		for _, x := range certs {
			rows.certs[x.ID] = x
		}
		return rows
	}
}

// checkInstanceAccess decides the seed's rules that depend on the caller's credential: another
// tenant's instance is ACCESS_DENIED, and each named instance needs compute:instances:update.
func (s *Service) checkInstanceAccess(ctx context.Context, c core.Caller, tenantID string, instanceIDs []string, byID map[string]store.Instance) error {
	if len(instanceIDs) == 0 {
		return nil
	}
	var objs []authz.Object
	for i, id := range instanceIDs {
		in, ok := byID[id]
		switch {
		case !ok:
			return &apierr.Error{Code: errcode.NotFound, Field: fieldIndex("targets.instanceIds", i), Message: "instance " + id + " not found"}
		case in.TenantID != tenantID:
			return &apierr.Error{Code: errcode.AccessDenied, Field: fieldIndex("targets.instanceIds", i), Message: "instance " + id + " belongs to another tenant"}
		}
		objs = append(objs, authz.Object{Type: authz.TypeInstance, ID: id, Tenant: in.TenantID})
	}
	ok, err := s.base.FilterVisible(ctx, c, authz.InstancesUpdate, objs)
	if err != nil {
		return err
	}
	for i, granted := range ok {
		if !granted {
			return &apierr.Error{Code: errcode.AccessDenied, Field: fieldIndex("targets.instanceIds", i),
				Message: "compute:instances:update on instance " + instanceIDs[i] + " is not granted"}
		}
	}
	return nil
}

// resolveTargets checks targets against the tenant's rows read in the transaction and returns the
// placement (with the subnet settled) and the references to record.
func resolveTargets(p lbPlacement, t *v1.LoadBalancerTargets, rows lbRows) (lbPlacement, []string, []string, error) {
	switch {
	case p.Scope == "global":
		if len(t.GetLoadBalancerIds()) == 0 {
			return p, nil, nil, apierr.Invalid("targets.loadBalancerIds", "a global load balancer targets loadBalancerIds")
		}
		byID := rows.lbs
		for i, id := range t.GetLoadBalancerIds() {
			lb, ok := byID[id]
			field := fieldIndex("targets.loadBalancerIds", i)
			if !ok || lb.TenantID != p.TenantID || lb.State == "deleted" {
				return p, nil, nil, &apierr.Error{Code: errcode.NotFound, Field: field, Message: "load balancer " + id + " not found"}
			}
			if lb.Scope != "regional" {
				return p, nil, nil, apierr.Invalid(field, "load balancer %s is not regional", id)
			}
			if lb.AccountID != p.AccountID {
				return p, nil, nil, apierr.Invalid(field, "load balancer %s is on another account", id)
			}
			if lb.State == "deleting" {
				return p, nil, nil, apierr.Invalid(field, "load balancer %s is being deleted", id)
			}
		}
		return p, nil, t.GetLoadBalancerIds(), nil
	case len(t.GetLoadBalancerIds()) > 0:
		return p, nil, nil, apierr.Invalid("targets.loadBalancerIds", "a regional load balancer targets pool or instanceIds")
	case t.GetPool():
		return p, nil, nil, nil
	}
	byID := rows.instances
	var subnets []string
	for i, id := range t.GetInstanceIds() {
		in, ok := byID[id]
		field := fieldIndex("targets.instanceIds", i)
		switch {
		case !ok || in.State == "deleted":
			return p, nil, nil, &apierr.Error{Code: errcode.NotFound, Field: field, Message: "instance " + id + " not found"}
		case in.TenantID != p.TenantID:
			return p, nil, nil, &apierr.Error{Code: errcode.AccessDenied, Field: field, Message: "instance " + id + " belongs to another tenant"}
		case in.Region != p.Region:
			return p, nil, nil, apierr.Invalid(field, "instance %s is in region %s, not %s", id, in.Region, p.Region)
		case in.AccountID != p.AccountID:
			return p, nil, nil, apierr.Invalid(field, "instance %s is on another account", id)
		}
		if !slices.Contains(subnets, in.SubnetID) {
			subnets = append(subnets, in.SubnetID)
		}
	}
	if p.SubnetFixed {
		for i, id := range t.GetInstanceIds() {
			if byID[id].SubnetID != p.SubnetID {
				if p.SubnetID == "" {
					return p, nil, nil, apierr.Invalid(fieldIndex("targets.instanceIds", i), "instance %s is on a tenant network; this load balancer reaches only instances on no tenant network", id)
				}
				return p, nil, nil, apierr.Invalid(fieldIndex("targets.instanceIds", i), "instance %s is not on subnet %s", id, p.SubnetID)
			}
		}
	} else {
		if len(subnets) > 1 {
			return p, nil, nil, apierr.Invalid("targets.instanceIds", "the named instances are on %d subnets; name instances of one subnet", len(subnets))
		}
		p.SubnetID, p.SubnetFixed = subnets[0], true
	}
	return p, t.GetInstanceIds(), nil, nil
}

// checkSubnet checks the subnet a load balancer names (read as sn, err): another tenant's is
// NOT_FOUND, another region or account INVALID_INPUT.
func checkSubnet(p lbPlacement, sn store.Subnet, err error) error {
	usable := sn.TenantID == p.TenantID && sn.State != "deleted" && sn.State != "deleting"
	if err := core.RefErr(err, usable, &apierr.Error{Code: errcode.NotFound, Field: "subnetId", Message: "subnet " + p.SubnetID + " not found"}); err != nil {
		return err
	}
	if sn.Region != p.Region {
		return apierr.Invalid("subnetId", "subnet %s is in region %s, not %s", sn.ID, sn.Region, p.Region)
	}
	if sn.AccountID != p.AccountID {
		return apierr.Invalid("subnetId", "subnet %s is on another account", sn.ID)
	}
	return nil
}

// certRef is a certificateId of a rule or a domain, with the field that names it.
type certRef struct{ id, field string }

func certificateRefs(rules []*v1.ForwardingRule, domains []*v1.Domain) []certRef {
	var refs []certRef
	for i, r := range rules {
		if r.GetCertificateId() != "" {
			refs = append(refs, certRef{r.GetCertificateId(), fieldIndex("forwarding", i) + ".certificateId"})
		}
	}
	for i, d := range domains {
		if d.GetCertificateId() != "" {
			refs = append(refs, certRef{d.GetCertificateId(), fieldIndex("domains", i) + ".certificateId"})
		}
	}
	return refs
}

// checkCertificates resolves every certificateId of the rules and domains: another tenant's is
// NOT_FOUND, another account's INVALID_INPUT. It returns the distinct ids.
func checkCertificates(p lbPlacement, rules []*v1.ForwardingRule, domains []*v1.Domain, rows lbRows) ([]string, error) {
	var out []string
	for _, r := range certificateRefs(rules, domains) {
		ce, ok := rows.certs[r.id]
		var err error
		if !ok {
			err = store.ErrNotFound
		}
		usable := ce.TenantID == p.TenantID && ce.State != "deleted" && ce.State != "deleting"
		if err := core.RefErr(err, usable, &apierr.Error{Code: errcode.NotFound, Field: r.field, Message: "certificate " + r.id + " not found"}); err != nil {
			return nil, err
		}
		if ce.AccountID != p.AccountID {
			return nil, apierr.Invalid(r.field, "certificate %s is on another account", r.id)
		}
		if !slices.Contains(out, r.id) {
			out = append(out, r.id)
		}
	}
	return out, nil
}

func fieldIndex(path string, i int) string {
	return path + "[" + strconv.Itoa(i) + "]"
}
