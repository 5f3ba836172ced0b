package authz

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	openfgav1 "github.com/openfga/api/proto/openfga/v1"
	"golang.org/x/sync/singleflight"
	"google.golang.org/protobuf/types/known/structpb"
)

// client implements Authorizer over an engine; Embedded and Remote embed it.
type client struct {
	eng   engine
	model *compiledModel
	boot  bootstrapResult
	// binding is a random value of this process that the contextual tenant tuple
	// carries and the request context expects (see model.fga's database_tenant).
	binding string
	// reqContext is the request context of every check, built once.
	reqContext *structpb.Struct
	// cache holds recent answers for DecisionTTL (see decisions.go).
	cache *decisions
	// feed keeps cache entries until the engine reports a change they rest on.
	feed changeFeed
	// flights collapses concurrent engine calls of one check.
	flights singleflight.Group

	// engineChecks counts the checks sent to the engine (EngineChecks).
	engineChecks atomic.Int64

	closed    atomic.Bool
	closeOnce sync.Once
	release   func() error
	closeErr  error
}

// newClient bootstraps the store and model on eng.
func newClient(ctx context.Context, eng engine, storeName, storeID string, release func() error) (*client, error) {
	m, err := compileModel(modelDSL)
	if err != nil {
		return nil, err
	}
	boot, err := bootstrap(ctx, eng, storeName, storeID, m)
	if err != nil {
		return nil, err
	}
	return newBootstrappedClient(eng, m, boot, release)
}

func newBootstrappedClient(eng engine, m *compiledModel, boot bootstrapResult, release func() error) (*client, error) {
	var raw [16]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return nil, fmt.Errorf("authz: binding: %w", err)
	}
	binding := hex.EncodeToString(raw[:])
	reqContext, err := structpb.NewStruct(map[string]any{
		// An empty binding for tuples that bring none, so they evaluate to false
		// rather than to a missing-parameter error.
		"binding":          "",
		"expected_binding": binding,
	})
	if err != nil {
		return nil, fmt.Errorf("authz: request context: %w", err)
	}
	c := &client{eng: eng, model: m, boot: boot, binding: binding, reqContext: reqContext, release: release, cache: newDecisions(DecisionTTL)}
	c.feed.c = c
	return c, nil
}

// StoreID is the OpenFGA store every call uses.
func (c *client) StoreID() string { return c.boot.storeID }

// ModelID is the authorization model version every call is pinned to.
func (c *client) ModelID() string { return c.boot.modelID }

// ModelWritten reports whether start wrote a new model version (the store's
// latest model differed from the embedded one, or there was none).
func (c *client) ModelWritten() bool { return c.boot.modelWritten }

// EngineChecks reports how many checks this client has sent to the engine (cache misses), for
// tests and benchmarks that count what a call costs.
func (c *client) EngineChecks() int64 { return c.engineChecks.Load() }

// EngineChecks reads the count of checks az sent to its engine, through wrappers that offer
// Unwrap() Authorizer; false when az keeps no count.
func EngineChecks(az Authorizer) (int64, bool) {
	for az != nil {
		if c, ok := az.(interface{ EngineChecks() int64 }); ok {
			return c.EngineChecks(), true
		}
		w, ok := az.(interface{ Unwrap() Authorizer })
		if !ok {
			break
		}
		az = w.Unwrap()
	}
	return 0, false
}

// Close releases the engine; later calls fail with ErrUnavailable.
func (c *client) Close() error {
	c.closeOnce.Do(func() {
		c.closed.Store(true)
		if c.release != nil {
			c.closeErr = c.release()
		}
	})
	return c.closeErr
}

func (c *client) live() error {
	if c.closed.Load() {
		return fmt.Errorf("%w: closed", ErrUnavailable)
	}
	return nil
}

// Check reports whether the principal holds the permission on the object.
func (c *client) Check(ctx context.Context, ck Check) (bool, error) {
	if err := c.live(); err != nil {
		return false, err
	}
	item, err := c.item(ck)
	if err != nil {
		return false, err
	}
	c.feed.touch()
	allowed, hit, gen := c.cache.get(ck)
	if hit {
		return allowed, nil
	}
	// Callers that miss the same check together (the open watches of a principal, all asking
	// again when the answer expires) share one engine call. The key carries the cache's
	// generation, so a caller arriving after a local grant or revocation starts its own call.
	// A caller whose context has ended fails closed without starting a call; Do, not DoChan,
	// so that a panic reaches the caller's goroutine and its recovery.
	if err := ctx.Err(); err != nil {
		return false, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	v, err, _ := c.flights.Do(fmt.Sprintf("%d %#v", gen, ck), func() (any, error) {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), checkFlightTimeout)
		defer cancel()
		return c.checkEngine(ctx, ck, item, gen)
	})
	if err != nil {
		return false, err
	}
	return v.(bool), nil
}

// checkFlightTimeout bounds one shared engine call of Check.
const checkFlightTimeout = 30 * time.Second

// checkEngine asks the engine one check and caches the answer.
func (c *client) checkEngine(ctx context.Context, ck Check, item *openfgav1.BatchCheckItem, gen uint64) (bool, error) {
	asked := time.Now()
	c.engineChecks.Add(1)
	resp, err := c.eng.Check(ctx, &openfgav1.CheckRequest{
		StoreId:              c.boot.storeID,
		AuthorizationModelId: c.boot.modelID,
		TupleKey:             item.GetTupleKey(),
		ContextualTuples:     item.GetContextualTuples(),
		Context:              item.GetContext(),
		Consistency:          openfgav1.ConsistencyPreference_HIGHER_CONSISTENCY,
	})
	if err != nil {
		return false, fmt.Errorf("authz: check %s %s on %s: %w", ck.Principal, ck.Permission, ck.Object, err)
	}
	c.cache.put(ck, resp.GetAllowed(), gen, asked)
	return resp.GetAllowed(), nil
}

// BatchCheck answers the checks in order, at most MaxBatch per engine call.
// Every check is validated before the first call, so a bad one costs no call.
func (c *client) BatchCheck(ctx context.Context, cs []Check) ([]bool, error) {
	if err := c.live(); err != nil {
		return nil, err
	}
	out := make([]bool, len(cs))
	c.feed.touch()
	// Only the checks the cache cannot answer go to the engine; pending maps their place in
	// items back to their place in cs.
	var items []*openfgav1.BatchCheckItem
	var pending []int
	var gens []uint64
	for i, ck := range cs {
		it, err := c.item(ck)
		if err != nil {
			return nil, fmt.Errorf("check %d: %w", i, err)
		}
		allowed, hit, gen := c.cache.get(ck)
		if hit {
			out[i] = allowed
			continue
		}
		it.CorrelationId = strconv.Itoa(len(items) % MaxBatch)
		items = append(items, it)
		pending = append(pending, i)
		gens = append(gens, gen)
	}
	asked := time.Now()
	for start := 0; start < len(items); start += MaxBatch {
		end := min(start+MaxBatch, len(items))
		c.engineChecks.Add(int64(end - start))
		resp, err := c.eng.BatchCheck(ctx, &openfgav1.BatchCheckRequest{
			StoreId:              c.boot.storeID,
			AuthorizationModelId: c.boot.modelID,
			Checks:               items[start:end],
			Consistency:          openfgav1.ConsistencyPreference_HIGHER_CONSISTENCY,
		})
		if err != nil {
			return nil, fmt.Errorf("authz: batch check: %w", err)
		}
		results := resp.GetResult()
		for j := start; j < end; j++ {
			i := pending[j]
			r, ok := results[items[j].GetCorrelationId()]
			if !ok {
				return nil, fmt.Errorf("%w: batch check: no result for check %d", ErrUnavailable, i)
			}
			if e := r.GetError(); e != nil {
				return nil, fmt.Errorf("authz: batch check %d (%s %s on %s): %w", i, cs[i].Principal, cs[i].Permission, cs[i].Object, itemError(e))
			}
			out[i] = r.GetAllowed()
			c.cache.put(cs[i], out[i], gens[j], asked)
		}
	}
	return out, nil
}

// itemError classifies the error of one batch item: input errors are the
// caller's (or the model's) fault, anything else is the engine's.
func itemError(e *openfgav1.CheckError) error {
	if e.GetInputError() != openfgav1.ErrorCode_no_error {
		return fmt.Errorf("%w: %s: %s", ErrRejected, e.GetInputError(), e.GetMessage())
	}
	return fmt.Errorf("%w: %s: %s", ErrUnavailable, e.GetInternalError(), e.GetMessage())
}

// item validates one check and renders it as an engine batch item, with the
// tenant from the database as a contextual tuple.
func (c *client) item(ck Check) (*openfgav1.BatchCheckItem, error) {
	if err := validID("principal", ck.Principal); err != nil {
		return nil, err
	}
	obj := ck.Object
	perms, ok := c.model.permissions[obj.Type]
	if !ok {
		return nil, fmt.Errorf("%w: unknown object type %q", ErrInvalid, obj.Type)
	}
	if err := validID("object", obj.ID); err != nil {
		return nil, err
	}
	rel := ck.Permission.Relation()
	if rel == "" || !perms[rel] {
		return nil, fmt.Errorf("%w: %q on %s", ErrUnknownPermission, ck.Permission, obj.Type)
	}
	it := &openfgav1.BatchCheckItem{
		TupleKey: &openfgav1.CheckRequestTupleKey{
			User:     principalUser(ck.Principal),
			Relation: rel,
			Object:   obj.String(),
		},
		Context: c.reqContext,
	}
	if !c.model.tenantLinked[obj.Type] {
		// The tenant object itself: its tenant can only be itself.
		if obj.Tenant != "" && obj.Tenant != obj.ID {
			return nil, fmt.Errorf("%w: tenant object %s given tenant %q", ErrInvalid, obj, obj.Tenant)
		}
		return it, nil
	}
	if obj.Tenant == "" {
		return nil, fmt.Errorf("%w: %s has no tenant", ErrInvalid, obj)
	}
	if err := validID("tenant", obj.Tenant); err != nil {
		return nil, err
	}
	bindCtx, err := structpb.NewStruct(map[string]any{"binding": c.binding})
	if err != nil {
		return nil, fmt.Errorf("authz: binding context: %w", err)
	}
	it.ContextualTuples = &openfgav1.ContextualTupleKeys{TupleKeys: []*openfgav1.TupleKey{{
		Object:   obj.String(),
		Relation: tenantRelation,
		User:     tenantUser(obj.Tenant),
		Condition: &openfgav1.RelationshipCondition{
			Name:    "database_tenant",
			Context: bindCtx,
		},
	}}}
	return it, nil
}
