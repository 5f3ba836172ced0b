package vps

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"better-compute.dev/compute/contract"
	v1 "better-compute.dev/compute/gen/go/bettercompute/compute/v1"
	"better-compute.dev/compute/provider"
	"better-compute.dev/compute/reconcile/managed"
	"better-compute.dev/compute/store"
)

// desiredLB is what the provider should hold for a load balancer row, computed from the
// tenant's own rows, or why the provider cannot be asked yet.
type desiredLB struct {
	spec provider.LoadBalancerSpec
	// instanceIDs are the instances whose machines spec reaches (recorded as reached).
	instanceIDs []string
	// waitFor, when set, names the dependency that is not ready (a subnet without its VPC, a
	// certificate not issued, a target load balancer not made): the pass comes back later.
	waitFor string
}

// desiredLoadBalancer computes the whole desired state of row. Machines are explicit ids of
// the tenant's instances, never a tag, so a load balancer can reach no other tenant's machine.
//
// poolInstances are store.PoolInstances of the row's tenant, pool, region and subnet, read with
// the row (store.DB.ReadLoadBalancerPass); they count only when the settings target the pool.
func (r *Reconciler) desiredLoadBalancer(ctx context.Context, p provider.Provider, row store.LoadBalancer, poolInstances []store.Instance) (desiredLB, error) {
	settings, err := contract.LoadBalancerSpec(row)
	if err != nil {
		return desiredLB{}, fmt.Errorf("vps: load balancer %s settings: %w", row.ID, err)
	}
	d := desiredLB{spec: provider.LoadBalancerSpec{
		Name: managed.ProviderName(row.ID), Scope: provider.Scope(row.Scope), RedirectHTTPToHTTPS: settings.GetRedirectHttpToHttps(),
	}}
	if row.Scope == string(provider.ScopeGlobal) {
		err = r.globalTargets(ctx, row, settings, &d)
	} else {
		d.spec.Scope, d.spec.Region = provider.ScopeRegional, row.Region
		err = r.regionalTargets(ctx, row, settings, poolInstances, &d)
	}
	if err != nil || d.waitFor != "" {
		return d, err
	}
	certs, wait, err := r.certificateIDs(ctx, p, row, settings)
	if err != nil || wait != "" {
		d.waitFor = wait
		return d, err
	}
	for _, f := range settings.GetForwarding() {
		d.spec.Forwarding = append(d.spec.Forwarding, provider.ForwardingRule{
			EntryProtocol: strings.ToLower(f.GetEntryProtocol()), EntryPort: int(f.GetEntryPort()),
			TargetProtocol: strings.ToLower(f.GetTargetProtocol()), TargetPort: int(f.GetTargetPort()),
			CertificateID: certs[f.GetCertificateId()], TLSPassthrough: f.GetTlsPassthrough(),
		})
	}
	d.spec.HealthCheck = healthCheck(settings.GetHealthCheck())
	if ss := settings.GetStickySessions(); ss != nil {
		d.spec.StickySessions = &provider.StickySessions{CookieName: ss.GetCookieName(), TTLSeconds: int(ss.GetTtlSeconds())}
	}
	d.spec.AllowSources = slices.Clone(settings.GetSourceRanges().GetAllow())
	d.spec.DenySources = slices.Clone(settings.GetSourceRanges().GetDeny())
	if d.spec.Scope == provider.ScopeGlobal {
		for _, dom := range settings.GetDomains() {
			d.spec.Domains = append(d.spec.Domains, provider.Domain{Name: dom.GetName(), CertificateID: certs[dom.GetCertificateId()]})
		}
	}
	return d, nil
}

// regionalTargets places a regional load balancer in its subnet's VPC (or the account's
// default network) and lists the machines of the instances it reaches.
func (r *Reconciler) regionalTargets(ctx context.Context, row store.LoadBalancer, settings *v1.LoadBalancer, poolInstances []store.Instance, d *desiredLB) error {
	q := r.opts.DB.Q()
	if row.SubnetID != "" {
		sn, err := store.GetSubnet(ctx, q, row.SubnetID)
		if err != nil {
			return fmt.Errorf("vps: subnet %s of load balancer %s: %w", row.SubnetID, row.ID, err)
		}
		if sn.State != "ready" || sn.ProviderID == "" {
			d.waitFor = "subnet " + sn.ID + " is " + sn.State
			return nil
		}
		d.spec.NetworkID = sn.ProviderID
	}
	var reached []store.Instance
	targets := settings.GetTargets()
	if targets.GetPool() {
		reached = append(reached, poolInstances...)
	}
	if named := targets.GetInstanceIds(); len(named) > 0 {
		in, err := store.GetInstances(ctx, q, named)
		if err != nil {
			return fmt.Errorf("vps: instances of load balancer %s: %w", row.ID, err)
		}
		for _, i := range in {
			// An instance counts once it has a machine and until it is being deleted; one of
			// another tenant never counts, whatever the settings say.
			if i.TenantID == row.TenantID && i.MachineID != "" && i.State != "deleting" && i.State != "deleted" {
				reached = append(reached, i)
			}
		}
	}
	for _, i := range reached {
		if !slices.Contains(d.instanceIDs, i.ID) {
			d.instanceIDs = append(d.instanceIDs, i.ID)
		}
		if !slices.Contains(d.spec.MachineIDs, i.MachineID) {
			d.spec.MachineIDs = append(d.spec.MachineIDs, i.MachineID)
		}
	}
	slices.Sort(d.instanceIDs)
	slices.Sort(d.spec.MachineIDs)
	return nil
}

// globalTargets lists the provider ids of the regional load balancers a global one targets;
// it waits until each has one.
func (r *Reconciler) globalTargets(ctx context.Context, row store.LoadBalancer, settings *v1.LoadBalancer, d *desiredLB) error {
	named := settings.GetTargets().GetLoadBalancerIds()
	rows, err := store.GetLoadBalancers(ctx, r.opts.DB.Q(), named)
	if err != nil {
		return fmt.Errorf("vps: targets of load balancer %s: %w", row.ID, err)
	}
	for _, t := range rows {
		if t.TenantID != row.TenantID || t.State == "deleting" || t.State == "deleted" {
			continue
		}
		if t.ProviderID == "" {
			d.waitFor = "target load balancer " + t.ID + " is not at the provider yet"
			return nil
		}
		d.spec.TargetLoadBalancerIDs = append(d.spec.TargetLoadBalancerIDs, t.ProviderID)
	}
	slices.Sort(d.spec.TargetLoadBalancerIDs)
	if len(d.spec.TargetLoadBalancerIDs) == 0 {
		d.waitFor = "no target load balancer is live"
	}
	return nil
}

// certificateIDs maps each certificate the settings name to its provider id. The provider is
// asked only once every one of them is ready; a managed certificate's id changes when it is
// renewed, so it is resolved by name each time.
func (r *Reconciler) certificateIDs(ctx context.Context, p provider.Provider, row store.LoadBalancer, settings *v1.LoadBalancer) (map[string]string, string, error) {
	var named []string
	for _, f := range settings.GetForwarding() {
		if id := f.GetCertificateId(); id != "" && !slices.Contains(named, id) {
			named = append(named, id)
		}
	}
	for _, dom := range settings.GetDomains() {
		if id := dom.GetCertificateId(); id != "" && !slices.Contains(named, id) {
			named = append(named, id)
		}
	}
	out := map[string]string{"": ""}
	if len(named) == 0 {
		return out, "", nil
	}
	rows, err := store.GetCertificates(ctx, r.opts.DB.Q(), named)
	if err != nil {
		return nil, "", fmt.Errorf("vps: certificates of load balancer %s: %w", row.ID, err)
	}
	byID := map[string]store.Certificate{}
	for _, c := range rows {
		if c.TenantID == row.TenantID {
			byID[c.ID] = c
		}
	}
	for _, id := range named {
		c, found := byID[id]
		switch {
		case !found:
			return nil, "certificate " + id + " is gone", nil
		case c.State != "ready" || c.ProviderID == "":
			return nil, "certificate " + id + " is " + c.State, nil
		case c.Kind == "managed":
			cur, err := p.Certificates().FindByName(ctx, managed.ProviderName(c.ID))
			if err != nil {
				return nil, "", fmt.Errorf("vps: certificate %s: %w", c.ID, err)
			}
			out[id] = cur.ID
		default:
			out[id] = c.ProviderID
		}
	}
	return out, "", nil
}

// healthCheck converts the tenant's health check; absent numbers stay zero (the provider's
// default).
func healthCheck(hc *v1.HealthCheck) *provider.HealthCheck {
	if hc == nil {
		return nil
	}
	return &provider.HealthCheck{
		Protocol: strings.ToLower(hc.GetProtocol()), Port: int(hc.GetPort()), Path: hc.GetPath(),
		IntervalSeconds: int(hc.GetIntervalSeconds()), TimeoutSeconds: int(hc.GetTimeoutSeconds()),
		HealthyThreshold: int(hc.GetHealthyThreshold()), UnhealthyThreshold: int(hc.GetUnhealthyThreshold()),
	}
}
