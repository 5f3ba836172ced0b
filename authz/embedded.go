package authz

import (
	"context"
	"errors"
	"fmt"

	openfgav1 "github.com/openfga/api/proto/openfga/v1"
	"github.com/openfga/openfga/pkg/server"
	"github.com/openfga/openfga/pkg/storage"
	"github.com/openfga/openfga/pkg/storage/memory"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Datastores of the embedded engine.
const (
	// DatastoreMemory keeps grants in process memory; they vanish on Close.
	DatastoreMemory = "memory"
	// DatastorePostgres keeps grants in PostgreSQL, shared by every replica that
	// points at the same database and schema.
	DatastorePostgres = "postgres"
)

// DefaultSchema is the PostgreSQL schema of the embedded engine's tables.
const DefaultSchema = "openfga"

// EmbeddedOptions configures NewEmbedded.
type EmbeddedOptions struct {
	// Datastore is DatastoreMemory (the default) or DatastorePostgres.
	Datastore string
	// DatabaseURL is the PostgreSQL URL (postgres datastore only).
	DatabaseURL string
	// Schema holds OpenFGA's tables inside that database; DefaultSchema if empty.
	// It is created and migrated at start.
	Schema string
	// StoreName names the OpenFGA store to reuse or create; DefaultStoreName if empty.
	StoreName string
}

// Embedded is an Authorizer backed by an OpenFGA server running in this process.
// It adds StoreID, ModelID and ModelWritten to the Authorizer methods.
type Embedded struct {
	*client
	srv *server.Server
}

var _ Authorizer = (*Embedded)(nil)

// NewEmbedded starts the OpenFGA engine in process, reuses or creates its store
// and writes the embedded model when it differs from the store's latest one.
//
// A fresh schema costs the most (OpenFGA's migrations run); an already migrated one
// is reused. Replicas on one schema start one after the other (a lease row, see
// lockSchema). Start-up times: docs/benchmarks.md.
func NewEmbedded(ctx context.Context, opts EmbeddedOptions) (*Embedded, error) {
	var (
		ds   storage.OpenFGADatastore
		lock func() error
		err  error
	)
	switch opts.Datastore {
	case "", DatastoreMemory:
		ds = memory.New()
	case DatastorePostgres:
		ds, lock, err = openPostgres(ctx, opts.DatabaseURL, opts.Schema)
		if err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("%w: unknown datastore %q", ErrInvalid, opts.Datastore)
	}
	serverOpts := []server.OpenFGAServiceV1Option{server.WithDatastore(ds)}
	var gate chan struct{}
	if opts.Datastore == DatastorePostgres {
		// OpenFGA's SQL iterators hold a pooled connection while a check opens
		// more; unbounded, 50 concurrent checks of one batch exhaust the pool
		// and wait on each other for ever. Bound checks per batch and calls in
		// flight so that they always fit in postgresPoolSize connections.
		serverOpts = append(serverOpts, server.WithMaxConcurrentChecksPerBatchCheck(postgresChecksPerBatch))
		gate = make(chan struct{}, postgresCallsInFlight)
	}
	srv, err := server.NewServerWithOpts(serverOpts...)
	if err != nil {
		ds.Close()
		if lock != nil {
			_ = lock()
		}
		return nil, fmt.Errorf("authz: start engine: %w", err)
	}
	eng := embeddedEngine{srv: srv, gate: gate}
	c, err := newClient(ctx, eng, opts.StoreName, "", func() error { srv.Close(); return nil })
	if lock != nil {
		// Bootstrap is done (or failed): let the next replica start.
		if uerr := lock(); uerr != nil && err == nil {
			err = uerr
		}
	}
	if err != nil {
		srv.Close()
		return nil, err
	}
	return &Embedded{client: c, srv: srv}, nil
}

// Bounds of the postgres datastore (see NewEmbedded).
const (
	postgresPoolSize       = 30
	postgresChecksPerBatch = 4
	postgresCallsInFlight  = 3
)

// embeddedEngine calls the in-process server and classifies its errors. A
// non-nil gate bounds the check and write calls in flight.
type embeddedEngine struct {
	srv  *server.Server
	gate chan struct{}
}

// enter waits for a slot of the gate; the returned func gives it back.
func (e embeddedEngine) enter(ctx context.Context) (func(), error) {
	if e.gate == nil {
		return func() {}, nil
	}
	select {
	case e.gate <- struct{}{}:
		return func() { <-e.gate }, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, ctx.Err())
	}
}

func (e embeddedEngine) ListStores(ctx context.Context, r *openfgav1.ListStoresRequest) (*openfgav1.ListStoresResponse, error) {
	resp, err := e.srv.ListStores(ctx, r)
	return resp, grpcError(err)
}

func (e embeddedEngine) CreateStore(ctx context.Context, r *openfgav1.CreateStoreRequest) (*openfgav1.CreateStoreResponse, error) {
	resp, err := e.srv.CreateStore(ctx, r)
	return resp, grpcError(err)
}

func (e embeddedEngine) DeleteStore(ctx context.Context, r *openfgav1.DeleteStoreRequest) (*openfgav1.DeleteStoreResponse, error) {
	resp, err := e.srv.DeleteStore(ctx, r)
	return resp, grpcError(err)
}

func (e embeddedEngine) ReadAuthorizationModels(ctx context.Context, r *openfgav1.ReadAuthorizationModelsRequest) (*openfgav1.ReadAuthorizationModelsResponse, error) {
	resp, err := e.srv.ReadAuthorizationModels(ctx, r)
	return resp, grpcError(err)
}

func (e embeddedEngine) WriteAuthorizationModel(ctx context.Context, r *openfgav1.WriteAuthorizationModelRequest) (*openfgav1.WriteAuthorizationModelResponse, error) {
	resp, err := e.srv.WriteAuthorizationModel(ctx, r)
	return resp, grpcError(err)
}

func (e embeddedEngine) Check(ctx context.Context, r *openfgav1.CheckRequest) (*openfgav1.CheckResponse, error) {
	leave, err := e.enter(ctx)
	if err != nil {
		return nil, err
	}
	defer leave()
	resp, err := e.srv.Check(ctx, r)
	return resp, grpcError(err)
}

func (e embeddedEngine) BatchCheck(ctx context.Context, r *openfgav1.BatchCheckRequest) (*openfgav1.BatchCheckResponse, error) {
	leave, err := e.enter(ctx)
	if err != nil {
		return nil, err
	}
	defer leave()
	resp, err := e.srv.BatchCheck(ctx, r)
	return resp, grpcError(err)
}

func (e embeddedEngine) Write(ctx context.Context, r *openfgav1.WriteRequest) (*openfgav1.WriteResponse, error) {
	leave, err := e.enter(ctx)
	if err != nil {
		return nil, err
	}
	defer leave()
	resp, err := e.srv.Write(ctx, r)
	return resp, grpcError(err)
}

// ReadChanges is not gated: it is one short read, and the change feed must not wait behind checks.
func (e embeddedEngine) ReadChanges(ctx context.Context, r *openfgav1.ReadChangesRequest) (*openfgav1.ReadChangesResponse, error) {
	resp, err := e.srv.ReadChanges(ctx, r)
	return resp, grpcError(err)
}

// grpcError sorts an engine error: validation failures (standard InvalidArgument
// or OpenFGA's 2000-range validation codes) are ErrRejected, anything else,
// cancellations and datastore failures included, is ErrUnavailable.
func grpcError(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	st, ok := status.FromError(err)
	if ok {
		c := st.Code()
		if c == codes.Code(openfgav1.ErrorCode_cancelled) {
			return fmt.Errorf("%w: %s", ErrUnavailable, st.Message())
		}
		if c == codes.InvalidArgument || c == codes.FailedPrecondition || (c >= 2000 && c < 3000) {
			return fmt.Errorf("%w: %s", ErrRejected, st.Message())
		}
		return fmt.Errorf("%w: %s (code %d)", ErrUnavailable, st.Message(), c)
	}
	return fmt.Errorf("%w: %w", ErrUnavailable, err)
}
