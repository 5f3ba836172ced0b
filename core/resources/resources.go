package resources

import (
	"context"
	"errors"
	"slices"
	"strconv"

	"google.golang.org/protobuf/types/known/timestamppb"

	"better-compute.dev/compute/apierr"
	"better-compute.dev/compute/authz"
	"better-compute.dev/compute/contract"
	"better-compute.dev/compute/core"
	v1 "better-compute.dev/compute/gen/go/bettercompute/compute/v1"
	"better-compute.dev/compute/ids"
	"better-compute.dev/compute/lifecycle"
	"better-compute.dev/compute/seal"
	"better-compute.dev/compute/store"
)

// CreateNetwork makes a tenant network on one of its accounts.
func (s *Service) CreateNetwork(ctx context.Context, r *v1.CreateNetworkRequest) (*v1.Network, error) {
	c, err := core.RequireCaller(ctx)
	if err != nil {
		return nil, err
	}
	if err := s.base.AuthorizeTenant(ctx, c, authz.NetworksManage, r.GetTenantId()); err != nil {
		return nil, err
	}
	if _, err := core.TenantAccount(ctx, s.base.Store.Q(), r.GetTenantId(), r.GetAccountId()); err != nil {
		return nil, err
	}
	n, err := store.InsertNetwork(ctx, s.base.Store.Q(), store.Network{ID: ids.New(ids.Network), TenantID: r.GetTenantId(), AccountID: r.GetAccountId(), Name: r.GetName()})
	if err != nil {
		return nil, core.StoreErr(err, "network")
	}
	return networkProto(n), nil
}

// GetNetwork returns one network.
func (s *Service) GetNetwork(ctx context.Context, r *v1.GetNetworkRequest) (*v1.Network, error) {
	c, err := core.RequireCaller(ctx)
	if err != nil {
		return nil, err
	}
	n, err := store.GetNetwork(ctx, s.base.Store.Q(), r.GetNetworkId())
	t := core.Target{Type: authz.TypeNetwork, ID: r.GetNetworkId(), Tenant: r.GetTenantId(), What: "network", Field: "networkId"}
	if _, err := s.base.AuthorizeOwned(ctx, c, t, n.TenantID, err, authz.NetworksRead, ""); err != nil {
		return nil, err
	}
	return networkProto(n), nil
}

// ListNetworks returns the tenant's networks in creation order (ListNetworksPage without the token).
func (s *Service) ListNetworks(ctx context.Context, r *v1.ListNetworksRequest) ([]*v1.Network, error) {
	ns, _, err := s.ListNetworksPage(ctx, r)
	return ns, err
}

// ListNetworksPage returns at most 1000 networks, or one page, and the next page's token.
func (s *Service) ListNetworksPage(ctx context.Context, r *v1.ListNetworksRequest) ([]*v1.Network, string, error) {
	return core.ListPage(ctx, s.base, r, core.Listing[store.Network]{
		Method: "networks", What: "network", Perm: authz.NetworksRead, Tenant: r.GetTenantId(),
		Key: func(n store.Network) store.Cursor { return core.ByID(n.ID) },
		Query: func(p store.Page) ([]store.Network, error) {
			return store.ListNetworks(ctx, s.base.Store.Q(), r.GetTenantId(), p)
		},
	}, core.Each(core.Infallible(networkProto)))
}

// CreateSubnet makes a subnet (a VPC at the provider) and queues its reconciler.
func (s *Service) CreateSubnet(ctx context.Context, r *v1.CreateSubnetRequest) (*v1.Subnet, error) {
	c, err := core.RequireCaller(ctx)
	if err != nil {
		return nil, err
	}
	if err := s.base.AuthorizeTenant(ctx, c, authz.NetworksManage, r.GetTenantId()); err != nil {
		return nil, err
	}
	var out store.Subnet
	err = s.base.Store.ExecuteTx(ctx, func(tx store.Tx) error {
		n, err := store.GetNetwork(ctx, tx, r.GetNetworkId())
		if err := core.RefErr(err, n.TenantID == r.GetTenantId(), apierr.NotFoundf("network %s not found", r.GetNetworkId())); err != nil {
			return err
		}
		out, err = store.InsertSubnet(ctx, tx, store.Subnet{
			ID: ids.New(ids.Subnet), TenantID: n.TenantID, NetworkID: n.ID, AccountID: n.AccountID,
			Name: r.GetName(), Region: r.GetRegion(), IPRange: r.GetIpRange(),
		})
		if err != nil {
			return err
		}
		return store.Enqueue(ctx, tx, contract.VPSKind, out.ID, nil)
	})
	if err != nil {
		return nil, core.StoreErr(err, "subnet")
	}
	return subnetProto(out), nil
}

// GetSubnet returns one subnet.
func (s *Service) GetSubnet(ctx context.Context, r *v1.GetSubnetRequest) (*v1.Subnet, error) {
	c, err := core.RequireCaller(ctx)
	if err != nil {
		return nil, err
	}
	sn, err := store.GetSubnet(ctx, s.base.Store.Q(), r.GetSubnetId())
	t := core.Target{Type: authz.TypeSubnet, ID: r.GetSubnetId(), Tenant: r.GetTenantId(), What: "subnet", Field: "subnetId"}
	if _, err := s.base.AuthorizeOwned(ctx, c, t, sn.TenantID, err, authz.NetworksRead, ""); err != nil {
		return nil, err
	}
	return subnetProto(sn), nil
}

// ListSubnets returns the tenant's subnets in creation order (ListSubnetsPage without the token).
func (s *Service) ListSubnets(ctx context.Context, r *v1.ListSubnetsRequest) ([]*v1.Subnet, error) {
	ss, _, err := s.ListSubnetsPage(ctx, r)
	return ss, err
}

// ListSubnetsPage returns at most 1000 subnets, or one page, and the next page's token.
func (s *Service) ListSubnetsPage(ctx context.Context, r *v1.ListSubnetsRequest) ([]*v1.Subnet, string, error) {
	return core.ListPage(ctx, s.base, r, core.Listing[store.Subnet]{
		Method: "subnets", What: "subnet", Perm: authz.NetworksRead, Tenant: r.GetTenantId(), Filters: []string{r.GetNetworkId()},
		Key: func(n store.Subnet) store.Cursor { return core.ByID(n.ID) },
		Query: func(p store.Page) ([]store.Subnet, error) {
			return store.ListSubnets(ctx, s.base.Store.Q(), r.GetTenantId(), r.GetNetworkId(), p)
		},
	}, core.Each(core.Infallible(subnetProto)))
}

// DeleteSubnet marks a subnet no instance or load balancer uses for deletion.
func (s *Service) DeleteSubnet(ctx context.Context, r *v1.DeleteSubnetRequest) (*v1.Subnet, error) {
	if _, _, err := s.base.AuthorizeByID(ctx, core.Target{Type: authz.TypeSubnet, ID: r.GetSubnetId(), Tenant: r.GetTenantId(), What: "subnet", Field: "subnetId"}, authz.NetworksManage, authz.NetworksRead); err != nil {
		return nil, err
	}
	var out store.Subnet
	err := s.base.Store.ExecuteTx(ctx, func(tx store.Tx) error {
		inUse, err := store.SubnetInUse(ctx, tx, r.GetSubnetId())
		if err != nil {
			return err
		}
		if inUse {
			return apierr.State("inUse", "subnet %s has instances or load balancers", r.GetSubnetId())
		}
		if err := store.SetSubnetState(ctx, tx, r.GetSubnetId(), "deleting", "", ""); err != nil {
			return err
		}
		if out, err = store.GetSubnet(ctx, tx, r.GetSubnetId()); err != nil {
			return err
		}
		return store.Enqueue(ctx, tx, contract.VPSKind, out.ID, nil)
	})
	if err != nil {
		return nil, core.StoreErr(err, "subnet")
	}
	return subnetProto(out), nil
}

// CreateCertificate stores a custom (PEM, key sealed) or managed certificate, pending.
func (s *Service) CreateCertificate(ctx context.Context, r *v1.CreateCertificateRequest) (*v1.Certificate, error) {
	c, err := core.RequireCaller(ctx)
	if err != nil {
		return nil, err
	}
	if err := s.base.AuthorizeTenant(ctx, c, authz.CertificatesManage, r.GetTenantId()); err != nil {
		return nil, err
	}
	row := store.Certificate{ID: ids.New(ids.Certificate), TenantID: r.GetTenantId(), AccountID: r.GetAccountId(), Name: r.GetName()}
	if m := r.GetManaged(); m != nil {
		row.Kind, row.DNSNames = "managed", m.GetDnsNames()
	} else {
		cu := r.GetCustom()
		sealed, err := s.base.Keyring.SealSecret(seal.Secret(cu.GetPrivateKey()), []byte(row.ID))
		if err != nil {
			return nil, apierr.InternalErr(err)
		}
		row.Kind, row.PrivateKeySealed = "custom", []byte(sealed)
		row.LeafCertificate, row.CertificateChain = cu.GetLeafCertificate(), cu.GetCertificateChain()
	}
	err = s.base.Store.ExecuteTx(ctx, func(tx store.Tx) error {
		if _, err := core.TenantAccount(ctx, tx, r.GetTenantId(), r.GetAccountId()); err != nil {
			return err
		}
		var err error
		if row, err = store.InsertCertificate(ctx, tx, row); err != nil {
			return err
		}
		return store.Enqueue(ctx, tx, contract.VPSKind, row.ID, nil)
	})
	if err != nil {
		return nil, core.StoreErr(err, "certificate")
	}
	return certificateProto(row), nil
}

// GetCertificate returns one certificate (never its key).
func (s *Service) GetCertificate(ctx context.Context, r *v1.GetCertificateRequest) (*v1.Certificate, error) {
	c, err := core.RequireCaller(ctx)
	if err != nil {
		return nil, err
	}
	ce, err := store.GetCertificate(ctx, s.base.Store.Q(), r.GetCertificateId())
	t := core.Target{Type: authz.TypeCertificate, ID: r.GetCertificateId(), Tenant: r.GetTenantId(), What: "certificate", Field: "certificateId"}
	if _, err := s.base.AuthorizeOwned(ctx, c, t, ce.TenantID, err, authz.CertificatesRead, ""); err != nil {
		return nil, err
	}
	return certificateProto(ce), nil
}

// ListCertificates returns the tenant's certificates in creation order (ListCertificatesPage
// without the token).
func (s *Service) ListCertificates(ctx context.Context, r *v1.ListCertificatesRequest) ([]*v1.Certificate, error) {
	cs, _, err := s.ListCertificatesPage(ctx, r)
	return cs, err
}

// ListCertificatesPage returns at most 1000 certificates, or one page, and the next page's token.
func (s *Service) ListCertificatesPage(ctx context.Context, r *v1.ListCertificatesRequest) ([]*v1.Certificate, string, error) {
	return core.ListPage(ctx, s.base, r, core.Listing[store.Certificate]{
		Method: "certificates", What: "certificate", Perm: authz.CertificatesRead, Tenant: r.GetTenantId(),
		Key: func(c store.Certificate) store.Cursor { return core.ByID(c.ID) },
		Query: func(p store.Page) ([]store.Certificate, error) {
			return store.ListCertificates(ctx, s.base.Store.Q(), r.GetTenantId(), p)
		},
	}, core.Each(core.Infallible(certificateProto)))
}

// DeleteCertificate marks a certificate no load balancer names for deletion.
func (s *Service) DeleteCertificate(ctx context.Context, r *v1.DeleteCertificateRequest) (*v1.Certificate, error) {
	if _, _, err := s.base.AuthorizeByID(ctx, core.Target{Type: authz.TypeCertificate, ID: r.GetCertificateId(), Tenant: r.GetTenantId(), What: "certificate", Field: "certificateId"}, authz.CertificatesManage, authz.CertificatesRead); err != nil {
		return nil, err
	}
	var out store.Certificate
	err := s.base.Store.ExecuteTx(ctx, func(tx store.Tx) error {
		inUse, err := store.CertificateInUse(ctx, tx, r.GetCertificateId())
		if err != nil {
			return err
		}
		if inUse {
			return apierr.State("inUse", "certificate %s is named by a load balancer", r.GetCertificateId())
		}
		if err := store.SetCertificateState(ctx, tx, r.GetCertificateId(), "deleting", "", ""); err != nil {
			return err
		}
		if out, err = store.GetCertificate(ctx, tx, r.GetCertificateId()); err != nil {
			return err
		}
		return store.Enqueue(ctx, tx, contract.VPSKind, out.ID, nil)
	})
	if err != nil {
		return nil, core.StoreErr(err, "certificate")
	}
	return certificateProto(out), nil
}

// visiblePool loads a pool the tenant may use: its own, or one where it holds a quota row.
func visiblePool(ctx context.Context, q store.Querier, tenantID, poolID string) (store.Pool, *v1.PoolPolicy, error) {
	p, err := store.GetPool(ctx, q, poolID)
	var qs []store.Quota
	if err == nil && p.TenantID != tenantID {
		if qs, err = store.ListQuotas(ctx, q, tenantID, poolID); err != nil {
			return p, nil, err
		}
	}
	return poolVisible(p, err, qs, tenantID, poolID)
}

// poolVisible is visiblePool on rows already read: the pool (p, err) and the tenant's quota rows
// on it (looked at only when the pool is another tenant's).
func poolVisible(p store.Pool, err error, quotas []store.Quota, tenantID, poolID string) (store.Pool, *v1.PoolPolicy, error) {
	return poolVisibleWith(p, err, int64(len(quotas)), tenantID, poolID)
}

// poolVisibleWith is poolVisible on the count of the tenant's quota rows on the pool.
func poolVisibleWith(p store.Pool, err error, quotaRows int64, tenantID, poolID string) (store.Pool, *v1.PoolPolicy, error) {
	if err := core.PoolUsable(p, err, quotaRows, tenantID, poolID); err != nil {
		return p, nil, err
	}
	policy := &v1.PoolPolicy{}
	if err := core.StoredJSON.Unmarshal(p.Policy, policy); err != nil {
		return p, nil, apierr.InternalErr(err)
	}
	return p, policy, nil
}

// CreateInstance makes an instance in a pool and region, books an instances quota and queues it.
func (s *Service) CreateInstance(ctx context.Context, r *v1.CreateInstanceRequest) (*v1.Instance, error) {
	c, err := core.RequireCaller(ctx)
	if err != nil {
		return nil, err
	}
	if err := s.base.AuthorizeTenant(ctx, c, authz.InstancesManage, r.GetTenantId()); err != nil {
		return nil, err
	}
	var out store.Instance
	err = s.base.Store.ExecuteTx(ctx, func(tx store.Tx) error {
		pool, policy, err := visiblePool(ctx, tx, r.GetTenantId(), r.GetPoolId())
		if err != nil {
			return err
		}
		if !slices.Contains(pool.Regions, r.GetRegion()) {
			return apierr.Invalid("region", "pool %s does not offer region %s", pool.ID, r.GetRegion())
		}
		if !slices.ContainsFunc(policy.GetFlavors(), func(f *v1.Flavor) bool { return f.GetName() == r.GetFlavor() }) {
			return apierr.Invalid("flavor", "pool %s does not offer flavor %s", pool.ID, r.GetFlavor())
		}
		if r.GetSubnetId() != "" {
			sn, err := store.GetSubnet(ctx, tx, r.GetSubnetId())
			if err := core.RefErr(err, sn.TenantID == r.GetTenantId() && sn.State != "deleted", apierr.NotFoundf("subnet %s not found", r.GetSubnetId())); err != nil {
				return err
			}
			if sn.Region != r.GetRegion() || sn.AccountID != pool.AccountID {
				return apierr.Invalid("subnetId", "subnet %s is in another region or account", sn.ID)
			}
		}
		if r.GetProjectId() != "" {
			if _, err := store.GetProject(ctx, tx, r.GetTenantId(), r.GetProjectId()); err != nil {
				return core.RefErr(err, true, core.ProjectTarget(r.GetTenantId(), r.GetProjectId()).NotFound(nil))
			}
		}
		id := ids.New(ids.Instance)
		err = lifecycle.Instance.Apply(ctx, tx, lifecycle.Create, lifecycle.Subject{TenantID: r.GetTenantId(), PoolID: pool.ID, ID: id}, nil)
		if errors.Is(err, lifecycle.ErrNoQuota) {
			return apierr.Quota("no %s quota left on pool %s", lifecycle.Instance.Quota(), pool.ID)
		}
		if err != nil {
			return err
		}
		out, err = store.InsertInstance(ctx, tx, store.Instance{
			ID: id, TenantID: r.GetTenantId(), ProjectID: r.GetProjectId(), PoolID: pool.ID,
			AccountID: pool.AccountID, Name: r.GetName(), Region: r.GetRegion(), SubnetID: r.GetSubnetId(), Flavor: r.GetFlavor(),
		})
		if err != nil {
			return err
		}
		return store.Enqueue(ctx, tx, contract.VPSKind, out.ID, nil)
	})
	if err != nil {
		return nil, core.StoreErr(err, "instance")
	}
	return instanceProto(out), nil
}

// GetInstance returns one instance.
func (s *Service) GetInstance(ctx context.Context, r *v1.GetInstanceRequest) (*v1.Instance, error) {
	c, err := core.RequireCaller(ctx)
	if err != nil {
		return nil, err
	}
	in, err := store.GetInstance(ctx, s.base.Store.Q(), r.GetInstanceId())
	t := core.Target{Type: authz.TypeInstance, ID: r.GetInstanceId(), Tenant: r.GetTenantId(), What: "instance", Field: "instanceId"}
	if _, err := s.base.AuthorizeOwned(ctx, c, t, in.TenantID, err, authz.InstancesRead, ""); err != nil {
		return nil, err
	}
	return instanceProto(in), nil
}

// ListInstances returns the tenant's instances in creation order (ListInstancesPage without the
// token).
func (s *Service) ListInstances(ctx context.Context, r *v1.ListInstancesRequest) ([]*v1.Instance, error) {
	is, _, err := s.ListInstancesPage(ctx, r)
	return is, err
}

// ListInstancesPage returns at most 1000 instances, or one page, and the next page's token.
func (s *Service) ListInstancesPage(ctx context.Context, r *v1.ListInstancesRequest) ([]*v1.Instance, string, error) {
	return core.ListPage(ctx, s.base, r, core.Listing[store.Instance]{
		Method: "instances", What: "instance", Perm: authz.InstancesRead, Tenant: r.GetTenantId(),
		Filters: []string{r.GetPoolId(), strconv.FormatBool(r.GetIncludeDeleted())},
		Key:     func(i store.Instance) store.Cursor { return core.ByID(i.ID) },
		Query: func(p store.Page) ([]store.Instance, error) {
			return store.ListInstances(ctx, s.base.Store.Q(), r.GetTenantId(), r.GetPoolId(), r.GetIncludeDeleted(), p)
		},
	}, core.Each(core.Infallible(instanceProto)))
}

// DeleteInstance marks an instance deleting and, in the same transaction, queues every load
// balancer that reaches it, so they stop reaching it on their next provider write.
func (s *Service) DeleteInstance(ctx context.Context, r *v1.DeleteInstanceRequest) (*v1.Instance, error) {
	if _, _, err := s.base.AuthorizeByID(ctx, core.Target{Type: authz.TypeInstance, ID: r.GetInstanceId(), Tenant: r.GetTenantId(), What: "instance", Field: "instanceId"}, authz.InstancesManage, authz.InstancesRead); err != nil {
		return nil, err
	}
	var out store.Instance
	err := s.base.Store.ExecuteTx(ctx, func(tx store.Tx) error {
		in, err := store.GetInstance(ctx, tx, r.GetInstanceId())
		if err != nil {
			return err
		}
		if in.State == "deleting" || in.State == "deleted" {
			out = in
			return nil
		}
		// The load balancers that reach it are locked before the instance is written: a load
		// balancer's update holds its row and then the instances it names (store/lockorder.go).
		lbs, err := store.LoadBalancersReaching(ctx, tx, in)
		if err != nil {
			return err
		}
		if err := store.LockLoadBalancers(ctx, tx, lbs); err != nil {
			return err
		}
		if err := store.SetInstanceState(ctx, tx, in.ID, "deleting", "", ""); err != nil {
			return err
		}
		if err := lifecycle.Instance.Apply(ctx, tx, lifecycle.Delete, lifecycle.Subject{TenantID: in.TenantID, PoolID: in.PoolID, ID: in.ID}, nil); err != nil {
			return err
		}
		for _, id := range lbs {
			if err := leaveLoadBalancer(ctx, tx, id, in); err != nil {
				return err
			}
		}
		if out, err = store.GetInstance(ctx, tx, in.ID); err != nil {
			return err
		}
		return store.Enqueue(ctx, tx, contract.VPSKind, in.ID, nil)
	})
	if err != nil {
		return nil, core.StoreErr(err, "instance")
	}
	return instanceProto(out), nil
}

func networkProto(n store.Network) *v1.Network {
	return &v1.Network{Id: n.ID, TenantId: n.TenantID, AccountId: n.AccountID, Name: n.Name, CreateTime: timestamppb.New(n.CreatedAt)}
}

func subnetProto(s store.Subnet) *v1.Subnet {
	return &v1.Subnet{Id: s.ID, TenantId: s.TenantID, NetworkId: s.NetworkID, AccountId: s.AccountID, Name: s.Name, Region: s.Region,
		IpRange: s.IPRange, State: s.State, LastError: s.LastError, CreateTime: timestamppb.New(s.CreatedAt)}
}

func certificateProto(c store.Certificate) *v1.Certificate {
	return &v1.Certificate{Id: c.ID, TenantId: c.TenantID, AccountId: c.AccountID, Name: c.Name, Kind: c.Kind, DnsNames: c.DNSNames,
		State: c.State, LastError: c.LastError, CreateTime: timestamppb.New(c.CreatedAt)}
}

func instanceProto(i store.Instance) *v1.Instance {
	return &v1.Instance{Id: i.ID, TenantId: i.TenantID, ProjectId: i.ProjectID, PoolId: i.PoolID, AccountId: i.AccountID, Name: i.Name,
		Region: i.Region, SubnetId: i.SubnetID, Flavor: i.Flavor, MachineId: i.MachineID, State: i.State, LastError: i.LastError,
		CreateTime: timestamppb.New(i.CreatedAt)}
}
