package server

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"better-compute.dev/compute/gen/go/bettercompute/compute/v1/errcode"
	"better-compute.dev/compute/requestid"
)

// Bounds of a request body on the API: every body is read whole before a handler sees it, within
// BodyReadTimeout and MaxBodyBytes, so that a client that drips its body or sends a broken one
// costs the replica no handler and no database connection, and gets a clear answer.
const (
	// BodyReadTimeout is how long a client has to send its request body once its headers are in,
	// unless Options.BodyReadTimeout says otherwise.
	BodyReadTimeout = 10 * time.Second
	// MaxBodyBytes bounds a request body (the handlers' own read limit is 4 MiB).
	MaxBodyBytes = 4 << 20
)

// readBodyFirst reads the request body under the bounds above and hands the handler a body that
// cannot fail. A body that cannot be read (a broken chunked encoding, a connection cut, a read past
// the deadline) or is too large is the caller's mistake: INVALID_INPUT on the JSON mapping and
// invalid_argument on Connect, gRPC and gRPC-Web, instead of an internal error from deep inside.
func readBodyFirst(timeout time.Duration, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody || r.Method == http.MethodGet || r.Method == http.MethodOptions {
			next.ServeHTTP(w, r)
			return
		}
		rc := http.NewResponseController(w)
		deadlineSet := rc.SetReadDeadline(time.Now().Add(timeout)) == nil
		body, err := io.ReadAll(io.LimitReader(r.Body, MaxBodyBytes+1))
		_ = r.Body.Close()
		if deadlineSet {
			_ = rc.SetReadDeadline(time.Time{})
		}
		switch {
		case err != nil:
			refuseBody(w, r, "the request body could not be read: "+bodyReadReason(err, timeout))
			return
		case len(body) > MaxBodyBytes:
			refuseBody(w, r, fmt.Sprintf("the request body exceeds %d bytes", MaxBodyBytes))
			return
		}
		if strings.HasPrefix(r.URL.Path, JSONPrefix) {
			// The JSON mapping takes gzip bodies as Connect does, under the same bound once
			// decompressed; Connect's own handlers decompress theirs.
			switch enc := strings.ToLower(strings.TrimSpace(r.Header.Get("Content-Encoding"))); enc {
			case "", "identity":
			case "gzip":
				if body, err = gunzip(body); err != nil {
					refuseBody(w, r, err.Error())
					return
				}
				r.Header.Del("Content-Encoding")
			default:
				refuseBody(w, r, fmt.Sprintf("Content-Encoding %q is not supported: send gzip or none", enc))
				return
			}
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		next.ServeHTTP(w, r)
	})
}

// bodyReadReason names what went wrong without quoting the body.
func bodyReadReason(err error, timeout time.Duration) string {
	var ne interface{ Timeout() bool }
	if errors.As(err, &ne) && ne.Timeout() {
		return fmt.Sprintf("not received within %v", timeout)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return "it ended early"
	}
	return "malformed encoding"
}

// refuseBody answers a body the server cannot take in the protocol the caller speaks.
func refuseBody(w http.ResponseWriter, r *http.Request, msg string) {
	w.Header().Set("Connection", "close")
	ct := r.Header.Get("Content-Type")
	switch {
	case strings.HasPrefix(r.URL.Path, JSONPrefix):
		writeJSONErrorStatus(w, http.StatusBadRequest, JSONError{Code: errcode.InvalidInput, Message: msg, RequestID: requestid.FromContext(r.Context())})
	case strings.HasPrefix(ct, "application/grpc"):
		// Trailers-only answer: the status travels in the headers.
		w.Header().Set("Content-Type", ct)
		w.Header().Set("Grpc-Status", "3")
		w.Header().Set("Grpc-Message", msg)
		w.WriteHeader(http.StatusOK)
	case strings.HasPrefix(ct, "application/connect+"):
		// A Connect stream: one end-of-stream message carrying the error.
		end, _ := json.Marshal(map[string]any{"error": map[string]string{"code": "invalid_argument", "message": msg}})
		var frame bytes.Buffer
		frame.WriteByte(0x02)
		_ = binary.Write(&frame, binary.BigEndian, uint32(len(end)))
		frame.Write(end)
		w.Header().Set("Content-Type", ct)
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(frame.Bytes())
	default:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_ = json.NewEncoder(w).Encode(map[string]string{"code": "invalid_argument", "message": msg})
	}
}

// gunzip decompresses a gzip body within MaxBodyBytes.
func gunzip(body []byte) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(body))
	if err != nil {
		return nil, errors.New("the request body is not valid gzip")
	}
	out, err := io.ReadAll(io.LimitReader(zr, MaxBodyBytes+1))
	if err != nil {
		return nil, errors.New("the request body is not valid gzip")
	}
	if len(out) > MaxBodyBytes {
		return nil, fmt.Errorf("the request body exceeds %d bytes once decompressed", MaxBodyBytes)
	}
	return out, nil
}
