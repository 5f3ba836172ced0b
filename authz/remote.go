package authz

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	openfgav1 "github.com/openfga/api/proto/openfga/v1"
	fgasdk "github.com/openfga/go-sdk"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// RemoteOptions configures NewRemote.
type RemoteOptions struct {
	// APIURL is the OpenFGA HTTP API, such as "https://fga.internal:8080".
	APIURL string
	// StoreID pins the store; when empty the store named StoreName is reused or
	// created.
	StoreID string
	// StoreName names the store to reuse or create; DefaultStoreName if empty.
	StoreName string
	// Token is the API token sent as a bearer credential; empty for none. It is
	// never logged nor put in errors.
	Token string
	// HTTPClient carries the calls; a client with a 10 s timeout if nil.
	HTTPClient *http.Client
}

// Remote is an Authorizer backed by an OpenFGA cluster, reached with the
// OpenFGA Go SDK. It adds StoreID, ModelID and ModelWritten to the Authorizer
// methods.
type Remote struct {
	*client
}

var _ Authorizer = (*Remote)(nil)

// NewRemote connects to an OpenFGA cluster, reuses or creates its store and
// writes the embedded model when it differs from the store's latest one.
func NewRemote(ctx context.Context, opts RemoteOptions) (*Remote, error) {
	if opts.APIURL == "" {
		return nil, fmt.Errorf("%w: remote engine needs an API URL", ErrInvalid)
	}
	hc := opts.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: 10 * time.Second}
	}
	headers := map[string]string{}
	if opts.Token != "" {
		// Set directly rather than through SDK credentials: the SDK ignores its
		// credentials when it is handed an HTTP client.
		headers["Authorization"] = "Bearer " + opts.Token
	}
	cfg, err := fgasdk.NewConfiguration(fgasdk.Configuration{
		ApiUrl:         opts.APIURL,
		HTTPClient:     hc,
		DefaultHeaders: headers,
		// No SDK retries: a caller waiting on a check prefers a prompt,
		// fail-closed error to a long backoff.
		RetryParams: &fgasdk.RetryParams{},
	})
	if err != nil {
		return nil, fmt.Errorf("%w: remote configuration: %w", ErrInvalid, err)
	}
	eng := &remoteEngine{api: fgasdk.NewAPIClient(cfg), hc: hc, baseURL: cfg.ApiUrl, headers: cfg.DefaultHeaders}
	c, err := newClient(ctx, eng, opts.StoreName, opts.StoreID, func() error {
		hc.CloseIdleConnections()
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &Remote{client: c}, nil
}

// remoteEngine speaks the engine interface over OpenFGA's HTTP API: through the
// Go SDK where it has the call, and as plain proto-JSON for the two calls SDK
// v0.6.3 lacks (server-side BatchCheck, and Write with on_duplicate/on_missing).
// SDK answers are decoded from the raw response body, so no field the SDK does
// not know is lost (the model hash depends on every field).
type remoteEngine struct {
	api     *fgasdk.APIClient
	hc      *http.Client
	baseURL string
	headers map[string]string
}

func (e *remoteEngine) ListStores(ctx context.Context, r *openfgav1.ListStoresRequest) (*openfgav1.ListStoresResponse, error) {
	call := e.api.OpenFgaApi.ListStores(ctx)
	if r.GetPageSize() != nil {
		call = call.PageSize(r.GetPageSize().GetValue())
	}
	if r.GetContinuationToken() != "" {
		call = call.ContinuationToken(r.GetContinuationToken())
	}
	_, hr, err := call.Execute()
	out := &openfgav1.ListStoresResponse{}
	return out, sdkResult(hr, err, out)
}

func (e *remoteEngine) CreateStore(ctx context.Context, r *openfgav1.CreateStoreRequest) (*openfgav1.CreateStoreResponse, error) {
	_, hr, err := e.api.OpenFgaApi.CreateStore(ctx).Body(fgasdk.CreateStoreRequest{Name: r.GetName()}).Execute()
	out := &openfgav1.CreateStoreResponse{}
	return out, sdkResult(hr, err, out)
}

func (e *remoteEngine) DeleteStore(ctx context.Context, r *openfgav1.DeleteStoreRequest) (*openfgav1.DeleteStoreResponse, error) {
	hr, err := e.api.OpenFgaApi.DeleteStore(ctx, r.GetStoreId()).Execute()
	return &openfgav1.DeleteStoreResponse{}, sdkResult(hr, err, nil)
}

func (e *remoteEngine) ReadAuthorizationModels(ctx context.Context, r *openfgav1.ReadAuthorizationModelsRequest) (*openfgav1.ReadAuthorizationModelsResponse, error) {
	call := e.api.OpenFgaApi.ReadAuthorizationModels(ctx, r.GetStoreId())
	if r.GetPageSize() != nil {
		call = call.PageSize(r.GetPageSize().GetValue())
	}
	if r.GetContinuationToken() != "" {
		call = call.ContinuationToken(r.GetContinuationToken())
	}
	_, hr, err := call.Execute()
	out := &openfgav1.ReadAuthorizationModelsResponse{}
	return out, sdkResult(hr, err, out)
}

func (e *remoteEngine) WriteAuthorizationModel(ctx context.Context, r *openfgav1.WriteAuthorizationModelRequest) (*openfgav1.WriteAuthorizationModelResponse, error) {
	var body fgasdk.WriteAuthorizationModelRequest
	if err := toSDK(r, &body); err != nil {
		return nil, err
	}
	_, hr, err := e.api.OpenFgaApi.WriteAuthorizationModel(ctx, r.GetStoreId()).Body(body).Execute()
	out := &openfgav1.WriteAuthorizationModelResponse{}
	return out, sdkResult(hr, err, out)
}

func (e *remoteEngine) Check(ctx context.Context, r *openfgav1.CheckRequest) (*openfgav1.CheckResponse, error) {
	var body fgasdk.CheckRequest
	if err := toSDK(r, &body); err != nil {
		return nil, err
	}
	_, hr, err := e.api.OpenFgaApi.Check(ctx, r.GetStoreId()).Body(body).Execute()
	out := &openfgav1.CheckResponse{}
	return out, sdkResult(hr, err, out)
}

func (e *remoteEngine) BatchCheck(ctx context.Context, r *openfgav1.BatchCheckRequest) (*openfgav1.BatchCheckResponse, error) {
	out := &openfgav1.BatchCheckResponse{}
	return out, e.post(ctx, "/stores/"+url.PathEscape(r.GetStoreId())+"/batch-check", r, out)
}

func (e *remoteEngine) Write(ctx context.Context, r *openfgav1.WriteRequest) (*openfgav1.WriteResponse, error) {
	out := &openfgav1.WriteResponse{}
	return out, e.post(ctx, "/stores/"+url.PathEscape(r.GetStoreId())+"/write", r, out)
}

// ReadChanges is plain HTTP: SDK v0.6.3 cannot send start_time.
func (e *remoteEngine) ReadChanges(ctx context.Context, r *openfgav1.ReadChangesRequest) (*openfgav1.ReadChangesResponse, error) {
	q := url.Values{}
	if r.GetPageSize() != nil {
		q.Set("page_size", strconv.Itoa(int(r.GetPageSize().GetValue())))
	}
	if r.GetContinuationToken() != "" {
		q.Set("continuation_token", r.GetContinuationToken())
	} else if r.GetStartTime() != nil {
		q.Set("start_time", r.GetStartTime().AsTime().UTC().Format(time.RFC3339Nano))
	}
	out := &openfgav1.ReadChangesResponse{}
	return out, e.call(ctx, http.MethodGet, "/stores/"+url.PathEscape(r.GetStoreId())+"/changes?"+q.Encode(), nil, out)
}

// toSDK converts an OpenFGA message to the SDK's struct of the same JSON shape.
func toSDK(m proto.Message, out any) error {
	b, err := protojson.Marshal(m)
	if err != nil {
		return fmt.Errorf("authz: encode request: %w", err)
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("authz: convert request: %w", err)
	}
	return nil
}

// sdkResult turns an SDK call's outcome into an engine error, decoding the raw
// body (which the SDK leaves readable) into out on success.
func sdkResult(hr *http.Response, err error, out proto.Message) error {
	if err != nil {
		return sdkError(err)
	}
	if hr == nil {
		return fmt.Errorf("%w: no response", ErrUnavailable)
	}
	if out == nil {
		return nil
	}
	b, rerr := io.ReadAll(hr.Body)
	if rerr != nil {
		return fmt.Errorf("%w: read response: %w", ErrUnavailable, rerr)
	}
	if uerr := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(b, out); uerr != nil {
		return fmt.Errorf("%w: decode response: %w", ErrUnavailable, uerr)
	}
	return nil
}

// sdkError sorts SDK errors: validation answers are ErrRejected, everything else
// (transport failures, authentication, rate limits, server errors) ErrUnavailable.
func sdkError(err error) error {
	var v fgasdk.FgaApiValidationError
	if errors.As(err, &v) && v.ResponseStatusCode() == http.StatusBadRequest {
		return fmt.Errorf("%w: %s", ErrRejected, v.ResponseCode())
	}
	var a fgasdk.FgaApiAuthenticationError
	if errors.As(err, &a) {
		// The body of an authentication failure is not repeated: keep it short.
		return fmt.Errorf("%w: authentication failed (status %d)", ErrUnavailable, a.ResponseStatusCode())
	}
	return fmt.Errorf("%w: %w", ErrUnavailable, err)
}
