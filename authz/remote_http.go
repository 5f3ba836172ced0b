package authz

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// maxResponseBytes bounds what is read from the engine in one answer.
const maxResponseBytes = 16 << 20

// post sends req as proto-JSON to path and decodes the answer into out, with the
// SDK client's headers (the bearer token among them).
func (e *remoteEngine) post(ctx context.Context, path string, req, out proto.Message) error {
	return e.call(ctx, http.MethodPost, path, req, out)
}

// call sends req (none when nil) with method to path and decodes the answer into out.
func (e *remoteEngine) call(ctx context.Context, method, path string, req, out proto.Message) error {
	var body io.Reader
	if req != nil {
		b, err := protojson.Marshal(req)
		if err != nil {
			return fmt.Errorf("authz: encode request: %w", err)
		}
		body = bytes.NewReader(b)
	}
	hreq, err := http.NewRequestWithContext(ctx, method, e.baseURL+path, body)
	if err != nil {
		return fmt.Errorf("%w: build request: %w", ErrInvalid, err)
	}
	for k, v := range e.headers {
		hreq.Header.Set(k, v)
	}
	if req != nil {
		hreq.Header.Set("Content-Type", "application/json")
	}
	hreq.Header.Set("Accept", "application/json")
	resp, err := e.hc.Do(hreq)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	if err != nil {
		return fmt.Errorf("%w: read response: %w", ErrUnavailable, err)
	}
	if resp.StatusCode >= http.StatusMultipleChoices {
		var apiErr struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		}
		_ = json.Unmarshal(b, &apiErr)
		sentinel := ErrUnavailable
		if resp.StatusCode == http.StatusBadRequest {
			sentinel = ErrRejected
		}
		if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
			return fmt.Errorf("%w: authentication failed (status %d)", sentinel, resp.StatusCode)
		}
		return fmt.Errorf("%w: status %d %s: %s", sentinel, resp.StatusCode, apiErr.Code, apiErr.Message)
	}
	if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(b, out); err != nil {
		return fmt.Errorf("%w: decode response: %w", ErrUnavailable, err)
	}
	return nil
}
