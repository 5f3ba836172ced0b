package substrates

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"google.golang.org/protobuf/encoding/protojson"

	"better-compute.dev/compute/contract"
	v1 "better-compute.dev/compute/gen/go/bettercompute/compute/v1"
	"better-compute.dev/compute/lifecycle"
	"better-compute.dev/compute/provider"
	"better-compute.dev/compute/reconcile"
	"better-compute.dev/compute/reconcile/managed"
	"better-compute.dev/compute/reconcile/substrates/k8sapply"
	"better-compute.dev/compute/redact"
	"better-compute.dev/compute/store"
)

// Modes of a substrate (substrates.mode).
const (
	modeCreate = "create"
	modeAdopt  = "adopt"
)

// FlavorLabel is the node pool (and so node) label naming the pool flavor it serves.
const FlavorLabel = "better-compute.dev/flavor"

// desired is what a pool's policy asks for.
type desired struct {
	accountID string
	mode      string
	region    string // create
	version   string // create
	adoptID   string // adopt
	pools     []store.SubstrateNodePool
}

// desiredOf reads the substrate an active pool's policy asks for; nil when there is none (no
// substrate in the policy, or the pool is archived).
func desiredOf(pool store.Pool) (*desired, error) {
	policy := &v1.PoolPolicy{}
	if err := protojson.Unmarshal(pool.Policy, policy); err != nil {
		return nil, fmt.Errorf("substrates: pool %s: policy: %w", pool.ID, err)
	}
	sub := policy.GetSubstrate()
	if sub == nil || pool.State == "archived" {
		return nil, nil
	}
	d := &desired{accountID: sub.GetAccount()}
	if a := sub.GetCluster().GetAdopt(); a != nil {
		d.mode, d.adoptID = modeAdopt, a.GetId()
	} else {
		c := sub.GetCluster().GetCreate()
		d.mode, d.region, d.version = modeCreate, c.GetRegion(), c.GetVersion()
	}
	for _, f := range policy.GetFlavors() {
		// A flavor with no nodes has no node pool: the provider keeps none of size zero.
		if f.GetCount() > 0 {
			d.pools = append(d.pools, store.SubstrateNodePool{
				Name: NodePoolName(pool.ID, f.GetName()), Flavor: f.GetName(), Size: f.GetSize(), Count: int(f.GetCount()),
			})
		}
	}
	return d, nil
}

// NodePoolName is the name of the node pool kept for a flavor, bc-<pool>-<flavor>; no tenant
// pool carries the prefix, so they never collide.
func NodePoolName(poolID, flavor string) string { return managed.ProviderName(poolID) + "-" + flavor }

// ours reports whether a node pool of the cluster is one this pool keeps.
func ours(poolID string, np provider.NodePool) bool {
	return strings.HasPrefix(np.Name, managed.ProviderName(poolID)+"-")
}

func nodePoolSpec(poolID string, np store.SubstrateNodePool) provider.NodePoolSpec {
	return provider.NodePoolSpec{Name: np.Name, Size: np.Size, Count: np.Count,
		Labels: map[string]string{k8sapply.PoolLabel: poolID, FlavorLabel: np.Flavor}}
}

// pass is one reconcile of one substrate.
type pass struct {
	r    *Reconciler
	f    *managed.Fence
	pool store.Pool
	sub  store.Substrate
	want *desired
	// saved is the substrate as last recorded; save compares against it to publish events.
	saved store.Substrate
	// tearing says the pass tears down what was made for the policy last acted on.
	tearing bool

	k       provider.Clusters // the account's clusters, once opened
	cluster *provider.Cluster // the cluster observed, adopted or created
	spec    provider.ClusterSpec
	nodeIDs []string // the node and machine ids of our node pools, for pruning joined nodes
	blocked string   // why bcd cannot run, "" when it can
	// failedPool is the node pool the provider refused to make or resize, for its error event.
	failedPool *store.SubstrateNodePool
}

// actsOnWanted reports whether what the substrate recorded (account, mode, cluster) is what the
// policy asks for now; when not, what was made for the old policy is torn down first.
func (p *pass) actsOnWanted() bool {
	s, w := p.sub, p.want
	if s.Mode == "" {
		return true
	}
	if s.AccountID != w.accountID || s.Mode != w.mode {
		return false
	}
	return w.mode == modeCreate || s.ClusterID == "" || s.ClusterID == w.adoptID
}

// save records the substrate as the pass has it now, fenced on the lease; extra runs in the
// same transaction.
func (p *pass) save(ctx context.Context, extra func(tx store.Tx) error) error {
	err := p.f.Write(ctx, func(ctx context.Context, tx store.Tx) error {
		if err := store.SaveSubstrate(ctx, tx, p.sub); err != nil {
			return err
		}
		typ := eventOf(p.saved, p.sub)
		for _, ev := range nodePoolEvents(p.saved, p.sub) {
			on := p.sub
			if on.ClusterID == "" { // torn down: the node pool was on the cluster last recorded
				on.ClusterID = p.saved.ClusterID
			}
			if err := contract.AppendSubstrateNodePoolEvent(ctx, tx, on, ev.pool, ev.typ, ""); err != nil {
				return err
			}
		}
		if p.failedPool != nil && typ == lifecycle.EventSubstrateError {
			if err := contract.AppendSubstrateNodePoolEvent(ctx, tx, p.sub, *p.failedPool, lifecycle.EventSubstrateNodePoolError, p.sub.LastError); err != nil {
				return err
			}
		}
		if typ != "" {
			if err := contract.AppendSubstrateEvent(ctx, tx, p.sub, typ); err != nil {
				return err
			}
		}
		if extra != nil {
			return extra(tx)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("substrates: record %s: %w", p.sub.ID, err)
	}
	p.saved = p.sub
	return nil
}

// eventOf is the event a save from prev to cur publishes, "" for none: ready when the
// substrate becomes ready, updated when a ready substrate's cluster or node pools change,
// error when it enters error or its error changes, deleted when the teardown finishes. A
// resync that changes nothing publishes nothing.
func eventOf(prev, cur store.Substrate) string {
	switch {
	case cur.State == prev.State && cur.State == "ready":
		if cur.ClusterID != prev.ClusterID || !slices.EqualFunc(cur.NodePools, prev.NodePools, sameNodePool) {
			return lifecycle.EventSubstrateUpdated
		}
	case cur.State == prev.State && cur.State == "error":
		if cur.LastError != prev.LastError {
			return lifecycle.EventSubstrateError
		}
	case cur.State == prev.State:
	case cur.State == "ready":
		return lifecycle.EventSubstrateReady
	case cur.State == "error":
		return lifecycle.EventSubstrateError
	case cur.State == "deleted":
		return lifecycle.EventSubstrateDeleted
	}
	return ""
}

// sameNodePool compares what a node pool is (its readiness aside: that has events of its own).
func sameNodePool(a, b store.SubstrateNodePool) bool {
	a.Ready, b.Ready = false, false
	return a == b
}

type nodePoolEvent struct {
	typ  string
	pool store.SubstrateNodePool
}

// nodePoolEvents are the node pool events a save from prev to cur publishes, by name: created
// when a node pool is first recorded, updated when its count, size or provider id changes,
// ready when every node of it becomes running, deleted when it is no longer recorded.
func nodePoolEvents(prev, cur store.Substrate) []nodePoolEvent {
	var out []nodePoolEvent
	for _, np := range cur.NodePools {
		i := slices.IndexFunc(prev.NodePools, func(o store.SubstrateNodePool) bool { return o.Name == np.Name })
		switch {
		case i < 0:
			out = append(out, nodePoolEvent{lifecycle.EventSubstrateNodePoolCreated, np})
		case !sameNodePool(prev.NodePools[i], np):
			out = append(out, nodePoolEvent{lifecycle.EventSubstrateNodePoolUpdated, np})
		}
		if np.Ready && (i < 0 || !prev.NodePools[i].Ready) {
			out = append(out, nodePoolEvent{lifecycle.EventSubstrateNodePoolReady, np})
		}
	}
	for _, np := range prev.NodePools {
		if !slices.ContainsFunc(cur.NodePools, func(o store.SubstrateNodePool) bool { return o.Name == np.Name }) {
			out = append(out, nodePoolEvent{lifecycle.EventSubstrateNodePoolDeleted, np})
		}
	}
	return out
}

// Failing records a failure the tenant should see as the substrate's last error (retryable
// ones are retried quietly) and returns it for the runner's backoff.
func (p *pass) Failing(ctx context.Context, err error) error {
	if !provider.Retryable(err) && !reconcile.LeaseLost(ctx) {
		p.sub.LastError = redact.Patterns(err.Error())
		if serr := p.save(ctx, nil); serr != nil {
			p.r.opts.Logger.Warn("substrate error not recorded", "substrate", p.sub.ID, "err", serr.Error())
		}
	}
	return err
}

// Errored records a refusal that retrying the same policy cannot fix (the provider refused the
// request): state error until the policy changes or the resync looks again. A teardown keeps
// tearing down: there it is shown as the last error.
func (p *pass) Errored(ctx context.Context, cause error) (reconcile.Result, error) {
	if p.tearing {
		return reconcile.Result{}, p.Failing(ctx, cause)
	}
	return p.terminal(ctx, cause.Error())
}

// terminal records a failure that retrying the same policy cannot fix (the provider refused
// the request, the adopted cluster does not exist): state error until the policy changes or
// the resync looks again.
func (p *pass) terminal(ctx context.Context, msg string) (reconcile.Result, error) {
	p.sub.State, p.sub.LastError = "error", redact.Patterns(msg)
	if err := p.save(ctx, nil); err != nil {
		return reconcile.Result{}, err
	}
	return reconcile.Result{RequeueAfter: p.r.opts.Resync}, nil
}
