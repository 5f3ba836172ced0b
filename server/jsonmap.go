package server

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"better-compute.dev/compute/apierr"
	c "better-compute.dev/compute/gen/go/bettercompute/compute/v1/computev1connect"
	"better-compute.dev/compute/gen/go/bettercompute/compute/v1/errcode"
	"better-compute.dev/compute/openapi"
	"better-compute.dev/compute/requestid"
)

// JSONPrefix is where the JSON mapping lives: POST /api/compute/<group>/<method>.
const JSONPrefix = "/api/compute/"

// jsonRoutes maps the seed's paths onto Connect procedures: every unary method's (access)
// json_route option (proto/bettercompute/compute/v1/options.proto). Streams (events/watch) have
// none: they are served over Connect, gRPC and gRPC-Web only.
var jsonRoutes = routesOf(Procedures())

// inputs holds the request message of every procedure, by procedure name.
var inputs = func() map[string]protoreflect.MessageDescriptor {
	out := map[string]protoreflect.MessageDescriptor{}
	protoregistry.GlobalFiles.RangeFilesByPackage(apiPackage, func(fd protoreflect.FileDescriptor) bool {
		for i := range fd.Services().Len() {
			sd := fd.Services().Get(i)
			for j := range sd.Methods().Len() {
				md := sd.Methods().Get(j)
				out["/"+string(sd.FullName())+"/"+string(md.Name())] = md.Input()
			}
		}
		return true
	})
	return out
}()

// routesOf maps each procedure's JSON route to it. Two procedures claiming one route is a schema
// mistake, refused when the package loads.
func routesOf(procs []Procedure) map[string]string {
	routes := map[string]string{}
	for _, p := range procs {
		route := p.Access.GetJsonRoute()
		if route == "" {
			continue
		}
		if prev, dup := routes[route]; dup {
			panic("server: JSON route " + route + " is claimed by " + prev + " and " + p.Name)
		}
		routes[route] = p.Name
	}
	return routes
}

// JSONMapping describes the JSON mapping for its OpenAPI document: the prefix, every route
// with its procedure, and the status of each error code. Everything that reads the routes from
// outside this file (cmd/openapi-gen, the document's tests) reads them here.
func JSONMapping() openapi.Mapping {
	m := openapi.Mapping{Prefix: JSONPrefix, Routes: map[string]string{}, ErrorStatus: map[string]int{}}
	for route, procedure := range jsonRoutes {
		m.Routes[route] = procedure
	}
	for code, status := range httpStatus {
		m.ErrorStatus[string(code)] = status
	}
	return m
}

// httpStatus of each platform reason on the JSON mapping.
var httpStatus = map[apierr.Code]int{
	errcode.InvalidInput:    http.StatusBadRequest,
	errcode.Unauthenticated: http.StatusUnauthorized,
	errcode.AccessDenied:    http.StatusForbidden,
	errcode.NotFound:        http.StatusNotFound,
	errcode.InvalidState:    http.StatusConflict,
	errcode.QuotaExceeded:   http.StatusTooManyRequests,
	errcode.Unavailable:     http.StatusServiceUnavailable,
	errcode.Internal:        http.StatusInternalServerError,
}

// JSONError is the body of a failed call on the JSON mapping: the reason as a plain string.
type JSONError struct {
	Code        apierr.Code `json:"code"`
	Message     string      `json:"message"`
	Field       string      `json:"field,omitempty"`
	StateReason string      `json:"stateReason,omitempty"`
	RequestID   string      `json:"requestId,omitempty"` // as the X-Request-Id header
}

// jsonMapping serves POST /api/compute/<group>/<method> by handing the call to the Connect
// handler of that procedure as a Connect unary JSON call (so validation, authentication and
// authorization are the very same). A failed call's platform error comes back from the chain
// (mappingErrors) as it is and is written as a JSONError.
func jsonMapping(connectMux http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		procedure, ok := jsonRoutes[strings.TrimPrefix(r.URL.Path, JSONPrefix)]
		if !ok {
			writeJSONError(w, JSONError{Code: errcode.NotFound, Message: "no such method: " + r.URL.Path, RequestID: requestid.FromContext(r.Context())})
			return
		}
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			writeJSONErrorStatus(w, http.StatusMethodNotAllowed, JSONError{Code: errcode.InvalidInput, Message: "use POST", RequestID: requestid.FromContext(r.Context())})
			return
		}
		// The body is in memory (readBodyFirst): kept to explain a decoding failure.
		var body []byte
		if r.Body != nil {
			body, _ = io.ReadAll(r.Body)
			_ = r.Body.Close()
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		answer := &jsonAnswer{}
		inner := r.Clone(context.WithValue(r.Context(), jsonAnswerKey{}, answer))
		inner.URL.Path = procedure
		inner.URL.RawPath = ""
		inner.RequestURI = ""
		// Plain curl sends -d as a form; the body is JSON whatever the client claims.
		inner.Header.Set("Content-Type", "application/json")
		inner.Header.Del("Connect-Protocol-Version")
		inner.Header.Del("Content-Encoding")
		if procedure == c.LoadBalancerServiceUpdateLoadBalancerProcedure || procedure == c.LoadBalancerServiceDeleteLoadBalancerProcedure {
			withIfMatch(inner) // If-Match is the body's etag
		}
		if procedure == c.LoadBalancerServiceUpdateLoadBalancerProcedure {
			withUpdateMask(inner) // the keys present are the parts replaced
		}
		rec := &errorCapture{ResponseWriter: w}
		connectMux.ServeHTTP(rec, inner)
		if rec.status == 0 || rec.status == http.StatusOK {
			return
		}
		var je JSONError
		if pe := answer.err; pe != nil {
			je = JSONError{Code: pe.Code, Message: pe.Message, Field: pe.Field, StateReason: pe.StateReason}
		} else {
			je = connectLayerError(rec.body.Bytes())
		}
		if je.Code == errcode.InvalidInput && je.Field == "" {
			// The decoder refused the body: name the field that does not fit.
			if m := explainJSON(body, inputs[procedure]); m != nil {
				je.Field, je.Message = m.Field, m.Error()
			}
		}
		je.RequestID = requestid.FromContext(r.Context())
		writeJSONError(w, je)
	})
}

// jsonAnswer holds a JSON-mapped call's platform error, put there by the chain (answerJSON).
type jsonAnswer struct{ err *apierr.Error }

type jsonAnswerKey struct{}

// answerJSON hands a call's platform error to the JSON mapping, when the call came through it.
func answerJSON(ctx context.Context, pe *apierr.Error) {
	if a, ok := ctx.Value(jsonAnswerKey{}).(*jsonAnswer); ok {
		a.err = pe
	}
}

// errorCapture passes successful responses through and holds back error bodies for rewriting.
type errorCapture struct {
	http.ResponseWriter
	status int
	body   bytes.Buffer
}

func (e *errorCapture) WriteHeader(status int) {
	e.status = status
	if status == http.StatusOK {
		e.ResponseWriter.WriteHeader(status)
	}
}

func (e *errorCapture) Write(b []byte) (int, error) {
	if e.status == 0 {
		e.WriteHeader(http.StatusOK)
	}
	if e.status != http.StatusOK {
		return e.body.Write(b)
	}
	return e.ResponseWriter.Write(b)
}

// connectLayerError is the JSONError of an answer no platform error made: the Connect layer
// refused the call itself (a body that is not JSON, an unknown field, one too large) or the
// client ended it. Only the Connect code and message of its error body are read.
func connectLayerError(body []byte) JSONError {
	var ce struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	}
	var code connect.Code
	if json.Unmarshal(body, &ce) != nil || code.UnmarshalText([]byte(ce.Code)) != nil {
		return JSONError{Code: errcode.Internal, Message: "internal error"}
	}
	reason := reasonOfConnectCode(code)
	switch {
	case code == connect.CodeResourceExhausted:
		// Connect's own limit on the request size.
		return JSONError{Code: reason, Message: "the request is too large"}
	case reason == errcode.InvalidInput:
		return JSONError{Code: reason, Message: "the body is not a valid request: " + ce.Message}
	case reason == errcode.Internal:
		return JSONError{Code: reason, Message: "internal error"}
	}
	return JSONError{Code: reason, Message: ce.Message}
}

// reasonOfConnectCode is the platform reason of a Connect code that came without a platform
// error: connectCode read backwards, where the transport's own codes say the request was refused
// (too large included: the platform's QUOTA_EXCEEDED always comes with its platform error) or
// the call was cut short, which nothing says cannot succeed later.
func reasonOfConnectCode(code connect.Code) apierr.Code {
	switch code {
	case connect.CodeOutOfRange, connect.CodeUnimplemented, connect.CodeResourceExhausted:
		return errcode.InvalidInput
	case connect.CodeDeadlineExceeded, connect.CodeCanceled, connect.CodeAborted:
		return errcode.Unavailable
	}
	for reason, c := range connectCode {
		if c == code {
			return reason
		}
	}
	return errcode.Internal
}

func writeJSONError(w http.ResponseWriter, e JSONError) {
	writeJSONErrorStatus(w, httpStatus[e.Code], e)
}

func writeJSONErrorStatus(w http.ResponseWriter, status int, e JSONError) {
	w.Header().Set("Content-Type", "application/json")
	if e.Code == errcode.Unavailable {
		w.Header().Set("Retry-After", strconv.Itoa(int(RetryAfter/time.Second)))
	}
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(e)
}
