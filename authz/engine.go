package authz

import (
	"context"

	openfgav1 "github.com/openfga/api/proto/openfga/v1"
)

// engine is the part of the OpenFGA API this package uses, in OpenFGA's own
// message types. The in-process server satisfies it through embeddedEngine; the
// remote engine speaks it over HTTP. Implementations return errors wrapping
// ErrUnavailable or ErrRejected.
type engine interface {
	ListStores(ctx context.Context, req *openfgav1.ListStoresRequest) (*openfgav1.ListStoresResponse, error)
	CreateStore(ctx context.Context, req *openfgav1.CreateStoreRequest) (*openfgav1.CreateStoreResponse, error)
	DeleteStore(ctx context.Context, req *openfgav1.DeleteStoreRequest) (*openfgav1.DeleteStoreResponse, error)
	ReadAuthorizationModels(ctx context.Context, req *openfgav1.ReadAuthorizationModelsRequest) (*openfgav1.ReadAuthorizationModelsResponse, error)
	WriteAuthorizationModel(ctx context.Context, req *openfgav1.WriteAuthorizationModelRequest) (*openfgav1.WriteAuthorizationModelResponse, error)
	Check(ctx context.Context, req *openfgav1.CheckRequest) (*openfgav1.CheckResponse, error)
	BatchCheck(ctx context.Context, req *openfgav1.BatchCheckRequest) (*openfgav1.BatchCheckResponse, error)
	Write(ctx context.Context, req *openfgav1.WriteRequest) (*openfgav1.WriteResponse, error)
	ReadChanges(ctx context.Context, req *openfgav1.ReadChangesRequest) (*openfgav1.ReadChangesResponse, error)
}
