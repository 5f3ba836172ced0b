package loadbalancers

import (
	"context"
	"errors"
	"slices"
	"strconv"

	"google.golang.org/protobuf/proto"

	"better-compute.dev/compute/apierr"
	"better-compute.dev/compute/authz"
	"better-compute.dev/compute/contract"
	"better-compute.dev/compute/core"
	v1 "better-compute.dev/compute/gen/go/bettercompute/compute/v1"
	"better-compute.dev/compute/gen/go/bettercompute/compute/v1/errcode"
	"better-compute.dev/compute/ids"
	"better-compute.dev/compute/lifecycle"
	"better-compute.dev/compute/store"
)

const opCreateLoadBalancer = "loadBalancers.create"

// CreateLoadBalancer records a load balancer, pending, books one loadBalancers quota on the pool,
// publishes providerLoadBalancer.created and queues the reconciler, in two round trips
// (store.ExecuteLockedTwoTrips; the argument for its isolation is in store/quota_booking.go):
//
//  1. BEGIN, the quota booking (CockroachDB: the unit taken, the quota row's lock first; on
//     PostgreSQL: whether a unit is free), the idempotency key (an expired record is dropped, a
//     live one answers the call as a replay) and every row the request names, locked FOR SHARE
//     on PostgreSQL;
//  2. the core judges the request in Go, then every write, the unit taken last on PostgreSQL
//     (the quota row is locked from there to COMMIT only, so a busy tenant's creates queue on
//     it for the shortest time), and COMMIT.
//
// A create that ends without a load balancer rolls its transaction back, booking included.
func (s *Service) CreateLoadBalancer(ctx context.Context, r *v1.CreateLoadBalancerRequest) (*v1.LoadBalancer, error) {
	c, err := core.RequireCaller(ctx)
	if err != nil {
		return nil, err
	}
	if err := s.base.AuthorizeTenant(ctx, c, authz.LoadBalancersManage, r.GetTenantId()); err != nil {
		return nil, err
	}
	// A rehearsal (validateOnly) is the same request as the call it rehearses: its key's record,
	// when the real call made one, answers it as a replay.
	hashed := r
	if r.GetValidateOnly() {
		hashed = proto.CloneOf(r)
		hashed.ValidateOnly = false
	}
	hash, err := requestHash(hashed)
	if err != nil {
		return nil, err
	}
	var plan lbCreatePlan
	queue := func(rd *store.Reads) { plan = lbCreatePlan{}; plan.queue(rd, r) }
	decide := func() (*store.Writes, error) {
		return rehearsed(r.GetValidateOnly())(s.decideLoadBalancerCreate(ctx, c, r, hash, &plan))
	}
	err = s.base.Store.ExecuteLockedTwoTrips(ctx, queue, decide)
	if errors.Is(err, store.ErrQuotaRefused) {
		// The unit the reads saw free was taken by a concurrent create before this one's writes.
		err = noQuotaLeft(r)
	}
	if errors.Is(err, errReplay) {
		// The key's live record answers; the transaction (and its booking) was rolled back.
		return s.replayed(ctx, r, hash, plan.idem)
	}
	if constraint := store.ConstraintName(err); errors.Is(err, store.ErrConflict) &&
		(constraint == "idempotency_keys_pkey" || constraint == "load_balancers_live_name") {
		// A concurrent twin with the same key committed first (its row took the name before
		// this one reached the key): answer as it did.
		if lb, done, err := s.replayCreate(ctx, r, hash); done {
			return lb, err
		}
	}
	if pe := (*apierr.Error)(nil); errors.As(err, &pe) && pe.Code == errcode.QuotaExceeded && r.GetIdempotencyKey() != "" {
		// No unit was left, perhaps because an idempotent twin of this very request took the
		// last one and committed while this one waited, or is committing now (awaited first):
		// then the answer is the twin's.
		if werr := s.base.Store.AwaitIdempotencyTwin(ctx, r.GetTenantId(), opCreateLoadBalancer, r.GetIdempotencyKey()); werr != nil {
			return nil, core.StoreErr(werr, "idempotency record")
		}
		if lb, done, rerr := s.replayCreate(ctx, r, hash); done {
			return lb, rerr
		}
	}
	if errors.Is(err, store.ErrConflict) && store.ConstraintName(err) == "load_balancers_live_name" {
		return nil, apierr.Invalid("name", "the tenant already has a load balancer named %s that is not deleted: choose another name, "+
			"or wait until that one is deleted", r.GetName())
	}
	if err != nil {
		return nil, core.StoreErr(err, "load balancer")
	}
	// The answer is built from the settings this create stored, not parsed back from their JSON:
	// the same message either way (TestCreateAnswersAsGet), without a decode per create.
	return loadBalancerView(plan.created, proto.CloneOf(plan.spec)), nil
}

// noQuotaLeft is a create's answer when its pool has no loadBalancers unit left for the tenant.
func noQuotaLeft(r *v1.CreateLoadBalancerRequest) error {
	return apierr.Quota("no %s quota left on pool %s for tenant %s", lifecycle.LoadBalancer.Quota(), r.GetPoolId(), r.GetTenantId())
}

// errReplay is decide's answer when the key's live record was found: the transaction rolls
// back, and the record answers the call.
var errReplay = errors.New("core: the idempotency key has a live record")

// lbCreatePlan holds what a create's first round trip reads, and the row its second writes.
type lbCreatePlan struct {
	booking    store.QuotaBooking
	idem       store.IdempotencyRecord
	idemErr    error
	pool       store.Pool
	poolErr    error
	project    store.Project
	projectErr error
	subnet     store.Subnet
	subnetErr  error
	rows       func() lbRows
	created    store.LoadBalancer
	spec       *v1.LoadBalancer // the settings created.Spec holds, as a message
}

// replay reports whether the key has a live record: the call is answered from it.
func (p *lbCreatePlan) replay() bool { return p.idemErr == nil && !p.idem.Expired }

// queue queues the transaction's first round trip: the booking first (on CockroachDB its lock is
// what the tenant's concurrent creates queue on), the idempotency key, then every row the
// request names.
func (p *lbCreatePlan) queue(rd *store.Reads, r *v1.CreateLoadBalancerRequest) {
	lifecycle.LoadBalancer.Book(rd, lifecycle.Subject{TenantID: r.GetTenantId(), PoolID: r.GetPoolId()}, &p.booking)
	rd.Idempotency(r.GetTenantId(), opCreateLoadBalancer, r.GetIdempotencyKey(), &p.idem, &p.idemErr)
	rd.Pool(r.GetPoolId(), &p.pool, &p.poolErr)
	if r.GetProjectId() != "" {
		rd.Project(r.GetTenantId(), r.GetProjectId(), &p.project, &p.projectErr)
	}
	if r.GetSubnetId() != "" {
		rd.Subnet(r.GetSubnetId(), &p.subnet, &p.subnetErr)
	}
	p.rows = lbRowReads(rd, "", r.GetTargets(), r.GetForwarding(), r.GetDomains())
}

// replayCreate answers a create whose idempotency key was seen: the same request returns the
// same load balancer; another request with that key is INVALID_INPUT.
func (s *Service) replayCreate(ctx context.Context, r *v1.CreateLoadBalancerRequest, hash []byte) (*v1.LoadBalancer, bool, error) {
	rec, err := store.GetIdempotency(ctx, s.base.Store.Q(), r.GetTenantId(), opCreateLoadBalancer, r.GetIdempotencyKey())
	if errors.Is(err, store.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, true, core.StoreErr(err, "idempotency record")
	}
	lb, err := s.replayed(ctx, r, hash, rec)
	return lb, true, err
}

// replayed is the answer to a create whose key has a live record rec: the load balancer it
// names, read now, when the request is the one the key was first used with.
func (s *Service) replayed(ctx context.Context, r *v1.CreateLoadBalancerRequest, hash []byte, rec store.IdempotencyRecord) (*v1.LoadBalancer, error) {
	if string(rec.RequestHash) != string(hash) {
		return nil, apierr.Invalid("idempotencyKey", "idempotencyKey %s was used with a different request", r.GetIdempotencyKey())
	}
	row, err := store.GetLoadBalancer(ctx, s.base.Store.Q(), rec.ResourceID)
	if err != nil {
		return nil, core.StoreErr(err, "load balancer")
	}
	return loadBalancerProto(row)
}

// decideLoadBalancerCreate judges a create on its first round trip's rows (in the order a caller
// fixes its mistakes: credentials on named instances, the pool, placement, references, then the
// quota) and returns the writes of the second.
func (s *Service) decideLoadBalancerCreate(ctx context.Context, c core.Caller, r *v1.CreateLoadBalancerRequest, hash []byte, plan *lbCreatePlan) (*store.Writes, error) {
	if plan.replay() {
		return nil, errReplay
	}
	rows := plan.rows()
	if err := s.checkInstanceAccess(ctx, c, r.GetTenantId(), r.GetTargets().GetInstanceIds(), rows.instances); err != nil {
		return nil, err
	}
	pool := plan.pool
	err := core.PoolUsable(pool, plan.poolErr, plan.booking.QuotaRows, r.GetTenantId(), r.GetPoolId())
	if err != nil {
		return nil, err
	}
	p := lbPlacement{TenantID: r.GetTenantId(), Scope: r.GetScope(), Region: r.GetRegion(), SubnetID: r.GetSubnetId(),
		AccountID: pool.AccountID, PoolID: pool.ID, SubnetFixed: r.GetSubnetId() != ""}
	if p.Scope == "" {
		p.Scope = "regional"
	}
	if p.Scope == "regional" {
		if p.Region == "" {
			if len(pool.Regions) != 1 {
				return nil, apierr.Invalid("region", "pool %s offers %d regions: name one", pool.ID, len(pool.Regions))
			}
			p.Region = pool.Regions[0]
		}
		if !slices.Contains(pool.Regions, p.Region) {
			return nil, apierr.Invalid("region", "pool %s does not offer region %s", pool.ID, p.Region)
		}
		if p.SubnetFixed {
			if err := checkSubnet(p, plan.subnet, plan.subnetErr); err != nil {
				return nil, err
			}
		}
	}
	if r.GetProjectId() != "" && plan.projectErr != nil {
		return nil, core.RefErr(plan.projectErr, true, core.ProjectTarget(r.GetTenantId(), r.GetProjectId()).NotFound(nil))
	}
	p, instanceIDs, lbIDs, err := resolveTargets(p, r.GetTargets(), rows)
	if err != nil {
		return nil, err
	}
	certIDs, err := checkCertificates(p, r.GetForwarding(), r.GetDomains(), rows)
	if err != nil {
		return nil, err
	}
	if !plan.booking.Booked {
		// Reported after the request's own mistakes, which a caller fixes first.
		return nil, noQuotaLeft(r)
	}
	plan.spec = &v1.LoadBalancer{
		Targets: r.GetTargets(), Forwarding: r.GetForwarding(), HealthCheck: r.GetHealthCheck(), StickySessions: r.GetStickySessions(),
		SourceRanges: r.GetSourceRanges(), RedirectHttpToHttps: r.GetRedirectHttpToHttps(), Domains: r.GetDomains(),
		DeletionProtection: r.GetDeletionProtection(),
		SizeUnit:           r.SizeUnit, HttpIdleTimeoutSeconds: r.HttpIdleTimeoutSeconds,
		EnableProxyProtocol: r.GetEnableProxyProtocol(), EnableBackendKeepalive: r.GetEnableBackendKeepalive(),
		Network: r.GetNetwork(), NetworkStack: r.GetNetworkStack(), TlsCipherPolicy: r.GetTlsCipherPolicy(),
		DisableLetsEncryptDnsRecords: r.GetDisableLetsEncryptDnsRecords(), Labels: r.GetLabels(),
	}
	spec, err := contract.EncodeLoadBalancerSpec(plan.spec)
	if err != nil {
		return nil, err
	}
	lb := store.LoadBalancer{
		ID: ids.New(ids.LoadBalancer), TenantID: r.GetTenantId(), ProjectID: r.GetProjectId(), PoolID: pool.ID, AccountID: pool.AccountID,
		Name: r.GetName(), Description: r.GetDescription(), Scope: p.Scope, Region: p.Region, SubnetID: p.SubnetID, Spec: spec,
	}
	var w store.Writes
	w.InsertLoadBalancer(lb, &plan.created)
	w.InsertLoadBalancerTargets(lb.ID, instanceIDs, lbIDs, certIDs)
	w.RecordIdempotency(store.IdempotencyRecord{
		TenantID: r.GetTenantId(), Operation: opCreateLoadBalancer, Key: r.GetIdempotencyKey(), RequestHash: hash, ResourceID: lb.ID,
	})
	if err := lifecycle.LoadBalancer.Queue(&w, lifecycle.Create, lbSubject(lb), map[string]any{
		"name": lb.Name, "scope": lb.Scope, "region": lb.Region, "poolId": lb.PoolID, "subnetId": lb.SubnetID,
	}); err != nil {
		return nil, err
	}
	w.EnqueueNew(contract.VPSKind, lb.ID)
	// Last, so that the quota row is locked from this statement to COMMIT only.
	lifecycle.LoadBalancer.Take(&w, &plan.booking)
	return &w, nil
}

// GetLoadBalancer returns one load balancer.
func (s *Service) GetLoadBalancer(ctx context.Context, r *v1.GetLoadBalancerRequest) (*v1.LoadBalancer, error) {
	c, err := core.RequireCaller(ctx)
	if err != nil {
		return nil, err
	}
	// The row carries its tenant: one read serves the prologue and the answer.
	row, err := store.GetLoadBalancer(ctx, s.base.Store.Q(), r.GetLoadBalancerId())
	t := core.Target{Type: authz.TypeProviderLoadBalancer, ID: r.GetLoadBalancerId(), Tenant: r.GetTenantId(), What: "load balancer", Field: "loadBalancerId"}
	if _, err := s.base.AuthorizeOwned(ctx, c, t, row.TenantID, err, authz.LoadBalancersRead, ""); err != nil {
		return nil, err
	}
	return loadBalancerProto(row)
}

// ListLoadBalancers returns the tenant's load balancers in creation order
// (ListLoadBalancersPage without the token).
func (s *Service) ListLoadBalancers(ctx context.Context, r *v1.ListLoadBalancersRequest) ([]*v1.LoadBalancer, error) {
	lbs, _, err := s.ListLoadBalancersPage(ctx, r)
	return lbs, err
}

// ListLoadBalancersPage returns at most 1000 load balancers, or one page of pageSize, in
// creation order (created_at, id), and the token of the next page when more follow.
func (s *Service) ListLoadBalancersPage(ctx context.Context, r *v1.ListLoadBalancersRequest) ([]*v1.LoadBalancer, string, error) {
	return core.ListPage(ctx, s.base, r, core.Listing[store.LoadBalancer]{
		Method: "loadBalancers", What: "load balancer", Perm: authz.LoadBalancersRead, Tenant: r.GetTenantId(),
		Filters: []string{r.GetPoolId(), r.GetProjectId(), strconv.FormatBool(r.GetIncludeDeleted())},
		Key:     func(l store.LoadBalancer) store.Cursor { return core.ByCreated(l.CreatedAt, l.ID) },
		Query: func(p store.Page) ([]store.LoadBalancer, error) {
			return store.ListLoadBalancers(ctx, s.base.Store.Q(), store.ListLoadBalancersParams{
				TenantID: r.GetTenantId(), PoolID: r.GetPoolId(), ProjectID: r.GetProjectId(), IncludeDeleted: r.GetIncludeDeleted(),
				Limit: p.Limit, After: p.After,
			})
		},
	}, core.Each(loadBalancerProto))
}

// UpdateLoadBalancer replaces each part given, returns it updating and publishes
// providerLoadBalancer.updated naming what changed. After the authorization prologue, one
// transaction of two round trips: the row (locked FOR UPDATE) and every row its settings name
// (FOR SHARE on PostgreSQL), then the writes with COMMIT. It is a locked transaction
// (store.ExecuteLockedTwoTrips, READ COMMITTED on PostgreSQL): concurrent updates of one load
// balancer queue on its row instead of failing each other's COMMIT; store/lockorder.go has the
// lock order and why the rules hold.
func (s *Service) UpdateLoadBalancer(ctx context.Context, r *v1.UpdateLoadBalancerRequest) (*v1.LoadBalancer, error) {
	c, _, err := s.authorizeLoadBalancer(ctx, r.GetTenantId(), r.GetLoadBalancerId(), authz.LoadBalancersManage)
	if err != nil {
		return nil, err
	}
	var (
		row, updated store.LoadBalancer
		rowErr       error
		refs         func() lbRows
	)
	err = s.base.Store.ExecuteLockedTwoTrips(ctx,
		func(rd *store.Reads) {
			updated = store.LoadBalancer{}
			rd.LoadBalancerForUpdate(r.GetLoadBalancerId(), &row, &rowErr)
			refs = lbRowReads(rd, r.GetLoadBalancerId(), r.GetTargets(), r.GetForwarding(), r.GetDomains())
		},
		func() (*store.Writes, error) {
			if rowErr != nil {
				return nil, rowErr
			}
			rows := refs()
			if err := s.checkInstanceAccess(ctx, c, r.GetTenantId(), r.GetTargets().GetInstanceIds(), rows.instances); err != nil {
				return nil, err
			}
			return rehearsed(r.GetValidateOnly())(decideLoadBalancerUpdate(r, row, rows, &updated))
		})
	if err != nil {
		return nil, core.StoreErr(err, "load balancer")
	}
	if updated.ID == "" {
		updated = row // nothing changed
	}
	return loadBalancerProto(updated)
}

// decideLoadBalancerUpdate judges an update of row on the rows it names and returns its writes
// (none when nothing changes); updated receives the row as written.
func decideLoadBalancerUpdate(r *v1.UpdateLoadBalancerRequest, row store.LoadBalancer, rows lbRows, updated *store.LoadBalancer) (*store.Writes, error) {
	switch row.State {
	case "deleted":
		return nil, apierr.NotFoundf("load balancer %s not found", row.ID)
	case "deleting":
		return nil, apierr.State("deleting", "load balancer %s is being deleted", row.ID)
	}
	if err := checkEtag(row, r.GetEtag()); err != nil {
		return nil, err
	}
	cur, err := contract.DecodeLoadBalancerSpec(row.Spec)
	if err != nil {
		return nil, err
	}
	next := proto.Clone(cur).(*v1.LoadBalancer)
	given, err := updateParts(r)
	if err != nil {
		return nil, err
	}
	var changed []string
	set := func(name string, apply func()) {
		if !given[name] {
			return
		}
		before := proto.Clone(next)
		apply()
		if !proto.Equal(before, next) {
			changed = append(changed, name)
		}
	}
	if given["targets"] && r.Targets == nil {
		return nil, apierr.Invalid("targets", "targets cannot be removed")
	}
	if given["forwarding"] && len(r.GetForwarding()) == 0 {
		return nil, apierr.Invalid("forwarding", "forwarding needs 1 to 15 rules")
	}
	set("targets", func() { next.Targets = r.GetTargets() })
	set("forwarding", func() { next.Forwarding = r.GetForwarding() })
	set("healthCheck", func() { next.HealthCheck = r.GetHealthCheck() })
	set("stickySessions", func() { next.StickySessions = r.GetStickySessions() })
	set("sourceRanges", func() { next.SourceRanges = r.GetSourceRanges() })
	set("redirectHttpToHttps", func() { next.RedirectHttpToHttps = r.GetRedirectHttpToHttps() })
	set("domains", func() { next.Domains = r.GetDomains() })
	set("deletionProtection", func() { next.DeletionProtection = r.GetDeletionProtection() })
	if err := checkCreateOnly(r, given, cur, row.Scope); err != nil {
		return nil, err
	}
	setLoadBalancerSettings(r, next, set)
	if given["domains"] && len(r.GetDomains()) > 0 && row.Scope != "global" {
		return nil, apierr.Invalid("domains", "domains are for global load balancers only")
	}
	// Scope, region, pool and subnet never change: targets are checked against the ones fixed at create.
	p := lbPlacement{TenantID: row.TenantID, Scope: row.Scope, Region: row.Region, SubnetID: row.SubnetID,
		AccountID: row.AccountID, PoolID: row.PoolID, SubnetFixed: true}
	_, instanceIDs, lbIDs, err := resolveTargets(p, next.GetTargets(), rows)
	if err != nil {
		return nil, err
	}
	certIDs, err := checkCertificates(p, next.GetForwarding(), next.GetDomains(), rows)
	if err != nil {
		return nil, err
	}
	if len(changed) == 0 {
		return nil, nil
	}
	spec, err := contract.EncodeLoadBalancerSpec(next)
	if err != nil {
		return nil, err
	}
	state := "updating"
	if row.State == "pending" {
		state = "pending" // not at the provider yet: the create will carry the new settings
	}
	var w store.Writes
	w.UpdateLoadBalancerSpec(row.ID, spec, state, updated)
	w.ReplaceLoadBalancerTargets(row.ID, instanceIDs, lbIDs, certIDs)
	if err := lifecycle.LoadBalancer.Queue(&w, lifecycle.Update, lbSubject(row), map[string]any{"changed": toAny(changed)}); err != nil {
		return nil, err
	}
	w.Enqueue(contract.VPSKind, row.ID, nil)
	return &w, nil
}

// DeleteLoadBalancer marks the load balancer deleting; the reconciler deletes it at the provider,
// refunds the quota and publishes providerLoadBalancer.deleted. A regional one that a live global
// one targets is INVALID_STATE inUse. After the prologue, one locked transaction of two round
// trips (as UpdateLoadBalancer): the row locked FOR UPDATE first, so the globals read after it
// are the newest (a global naming it holds it FOR SHARE until it commits).
func (s *Service) DeleteLoadBalancer(ctx context.Context, r *v1.DeleteLoadBalancerRequest) (*v1.LoadBalancer, error) {
	_, obj, err := s.authorizeLoadBalancer(ctx, r.GetTenantId(), r.GetLoadBalancerId(), authz.LoadBalancersManage)
	if err != nil {
		return nil, err
	}
	var (
		row, deleting store.LoadBalancer
		rowErr        error
		globals       []string
	)
	err = s.base.Store.ExecuteLockedTwoTrips(ctx,
		func(rd *store.Reads) {
			deleting, globals = store.LoadBalancer{}, nil
			rd.LoadBalancerForUpdate(obj.ID, &row, &rowErr)
			rd.GlobalsTargeting(obj.ID, &globals)
		},
		func() (*store.Writes, error) {
			if rowErr != nil {
				return nil, rowErr
			}
			if row.State == "deleting" || row.State == "deleted" {
				return nil, nil // already asked: deleting twice is no error
			}
			if err := checkEtag(row, r.GetEtag()); err != nil {
				return nil, err
			}
			spec, err := contract.DecodeLoadBalancerSpec(row.Spec)
			if err != nil {
				return nil, err
			}
			if spec.GetDeletionProtection() {
				return nil, apierr.State("deletionProtected", "load balancer %s has deletion protection: update deletionProtection to false first", row.ID)
			}
			if row.Scope == "regional" && len(globals) > 0 {
				return nil, apierr.State("inUse", "load balancer %s is targeted by global load balancer %s", row.ID, globals[0])
			}
			var w store.Writes
			w.SetLoadBalancerState(row.ID, "deleting", &deleting)
			if err := lifecycle.LoadBalancer.Queue(&w, lifecycle.Delete, lbSubject(row), nil); err != nil {
				return nil, err
			}
			w.Enqueue(contract.VPSKind, row.ID, nil)
			return rehearsed(r.GetValidateOnly())(&w, nil)
		})
	if err != nil {
		return nil, core.StoreErr(err, "load balancer")
	}
	if deleting.ID == "" {
		deleting = row
	}
	return loadBalancerProto(deleting)
}

// checkEtag refuses a change decided on another version of the load balancer than row (AIP-154):
// an empty etag asks for none (the last writer wins).
func checkEtag(row store.LoadBalancer, etag string) error {
	if etag == "" || etag == loadBalancerEtag(row) {
		return nil
	}
	return apierr.State("etagMismatch", "load balancer %s changed since etag %q was read: read it again and retry", row.ID, etag)
}

// rehearsed turns a decision's writes into a rehearsal when validateOnly is set: they run and are
// rolled back (store.Writes.DryRun), so every check the call makes answers, and nothing stays.
func rehearsed(validateOnly bool) func(*store.Writes, error) (*store.Writes, error) {
	return func(w *store.Writes, err error) (*store.Writes, error) {
		if err == nil && w != nil && validateOnly {
			w.DryRun()
		}
		return w, err
	}
}

// authorizeLoadBalancer checks perm on a load balancer named by id; another tenant's load balancer
// is NOT_FOUND (field loadBalancerId), exactly like one that does not exist.
func (s *Service) authorizeLoadBalancer(ctx context.Context, tenantID, id string, perm authz.Permission) (core.Caller, authz.Object, error) {
	return s.base.AuthorizeByID(ctx, core.Target{Type: authz.TypeProviderLoadBalancer, ID: id, Tenant: tenantID, What: "load balancer", Field: "loadBalancerId"}, perm, authz.LoadBalancersRead)
}

// lbSubject is the load balancer a lifecycle transition happens to.
func lbSubject(row store.LoadBalancer) lifecycle.Subject {
	return lifecycle.Subject{TenantID: row.TenantID, PoolID: row.PoolID, ID: row.ID}
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}
