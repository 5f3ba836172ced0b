package authz

import (
	"context"
	"fmt"

	openfgav1 "github.com/openfga/api/proto/openfga/v1"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// DefaultStoreName is the OpenFGA store used when no name or id is given.
const DefaultStoreName = "better-compute"

// bootstrapResult is what start resolved: the store and model every call uses.
type bootstrapResult struct {
	storeID      string
	modelID      string
	modelWritten bool
}

// bootstrap resolves the store (by id, or by name, creating it when absent) and
// makes sure its latest model is ours, writing a new model version only when
// the content hash differs.
func bootstrap(ctx context.Context, eng engine, storeName, storeID string, m *compiledModel) (bootstrapResult, error) {
	var res bootstrapResult
	if storeID == "" {
		id, err := resolveStore(ctx, eng, storeName)
		if err != nil {
			return res, err
		}
		storeID = id
	}
	res.storeID = storeID

	latest, err := eng.ReadAuthorizationModels(ctx, &openfgav1.ReadAuthorizationModelsRequest{
		StoreId:  storeID,
		PageSize: wrapperspb.Int32(1),
	})
	if err != nil {
		return res, fmt.Errorf("authz: read latest model of store %s: %w", storeID, err)
	}
	if models := latest.GetAuthorizationModels(); len(models) > 0 {
		h, err := modelHash(models[0])
		if err != nil {
			return res, err
		}
		if h == m.hash {
			res.modelID = models[0].GetId()
			return res, nil
		}
	}
	written, err := eng.WriteAuthorizationModel(ctx, &openfgav1.WriteAuthorizationModelRequest{
		StoreId:         storeID,
		SchemaVersion:   m.proto.GetSchemaVersion(),
		TypeDefinitions: m.proto.GetTypeDefinitions(),
		Conditions:      m.proto.GetConditions(),
	})
	if err != nil {
		return res, fmt.Errorf("authz: write model to store %s: %w", storeID, err)
	}
	res.modelID = written.GetAuthorizationModelId()
	res.modelWritten = true
	return res, nil
}

// resolveStore finds the store with the given name, creating it when there is
// none. Replicas racing at first start may each create one; all of them then pick
// the oldest (smallest ULID) and the losers delete their own, so they converge.
func resolveStore(ctx context.Context, eng engine, name string) (string, error) {
	if name == "" {
		name = DefaultStoreName
	}
	id, err := oldestStore(ctx, eng, name)
	if err != nil || id != "" {
		return id, err
	}
	created, err := eng.CreateStore(ctx, &openfgav1.CreateStoreRequest{Name: name})
	if err != nil {
		return "", fmt.Errorf("authz: create store %q: %w", name, err)
	}
	id, err = oldestStore(ctx, eng, name)
	if err != nil {
		return "", err
	}
	if id != created.GetId() {
		// Another replica won the race; ours is empty, so dropping it loses nothing.
		// A failure to drop it leaves an unused store behind, which is harmless.
		_, _ = eng.DeleteStore(ctx, &openfgav1.DeleteStoreRequest{StoreId: created.GetId()})
	}
	if id == "" {
		return created.GetId(), nil
	}
	return id, nil
}

// oldestStore returns the id of the oldest store named name, or "" when none.
func oldestStore(ctx context.Context, eng engine, name string) (string, error) {
	best := ""
	token := ""
	for {
		resp, err := eng.ListStores(ctx, &openfgav1.ListStoresRequest{
			PageSize:          wrapperspb.Int32(100),
			ContinuationToken: token,
			Name:              name,
		})
		if err != nil {
			return "", fmt.Errorf("authz: list stores: %w", err)
		}
		for _, s := range resp.GetStores() {
			// Store ids are ULIDs: lexical order is creation order.
			if s.GetName() == name && (best == "" || s.GetId() < best) {
				best = s.GetId()
			}
		}
		token = resp.GetContinuationToken()
		if token == "" || len(resp.GetStores()) == 0 {
			return best, nil
		}
	}
}
