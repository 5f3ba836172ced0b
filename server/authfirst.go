package server

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"

	"connectrpc.com/connect"

	"better-compute.dev/compute/apierr"
	"better-compute.dev/compute/core"
	c "better-compute.dev/compute/gen/go/bettercompute/compute/v1/computev1connect"
	"better-compute.dev/compute/gen/go/bettercompute/compute/v1/errcode"
	"better-compute.dev/compute/requestid"
)

// servicePrefix is the path prefix of every Connect, gRPC and gRPC-Web procedure of the API.
const servicePrefix = "/" + apiPackage + "."

// authenticateFirst resolves the bearer token of every API call before anything else looks at
// the request: before its body is read, decoded or validated. An anonymous caller learns only
// that credentials are required, never the API's rules. The caller travels in the request's
// context, where the authenticating link finds it. Public paths (health, the OpenAPI document, the
// console, reflection) and the substrate join (authenticated by its join token) pass untouched.
func authenticateFirst(e *edge, next http.Handler) http.Handler {
	errs := connect.NewErrorWriter()
	refuse := func(w http.ResponseWriter, r *http.Request, err error) {
		if errs.IsSupported(r) && !strings.HasPrefix(r.URL.Path, JSONPrefix) {
			_ = errs.Write(w, r, withRequestID(r.Context(), toConnect(err)))
			return
		}
		// The JSON mapping, or a protocol Connect does not know: a plain JSON error body.
		e := apierr.From(err)
		writeJSONError(w, JSONError{Code: e.Code, Message: e.Message, RequestID: requestid.FromContext(r.Context())})
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !needsBearer(r.URL.Path) {
			next.ServeHTTP(w, r)
			return
		}
		start := time.Now()
		// The client's deadline covers the whole call, its authentication included: Connect
		// applies it only once the handler runs, after this.
		if d, ok := clientTimeout(r.Header); ok {
			c, cancel := context.WithTimeout(r.Context(), d)
			defer cancel()
			r = r.WithContext(c)
		}
		ctx, err := func() (ctx context.Context, err error) {
			defer func() {
				if p := recover(); p != nil {
					err = panicked(r.Context(), e.log, r.URL.Path, p)
				}
			}()
			return authenticate(r.Context(), e.base, r.Header.Get("Authorization"))
		}()
		if err != nil {
			// A client that went away while its token was looked up ended the call itself.
			answer := endedByClient(r.Context(), toConnect(err))
			// Counted and logged as every other call's outcome, under a procedure name the server
			// knows (a caller's made-up path must not become a metric label).
			e.observe(r.Context(), knownProcedure(r.URL.Path), start, answer)
			if r.Context().Err() != nil {
				return // nobody is left to read an answer
			}
			refuse(w, r, err)
			return
		}
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// needsBearer tells whether a path is an API call that a bearer token must authenticate.
func needsBearer(path string) bool {
	switch {
	case strings.HasPrefix(path, JSONPrefix):
		return true // GET openapi.json has a route of its own, ahead of this one
	case strings.HasPrefix(path, "/"+c.SubstrateJoinServiceName+"/"):
		return false
	}
	return strings.HasPrefix(path, servicePrefix)
}

// authenticating is the link that makes sure a call has a caller. authenticateFirst has resolved
// the bearer token before the body was read; a handler reached another way (a test mounting the
// handlers alone) authenticates here, still before its request is validated.
func authenticating(base *core.Base) link {
	return func(ctx context.Context, call callInfo, next func(context.Context) error) error {
		if _, ok := core.CallerFrom(ctx); !ok {
			var err error
			if ctx, err = authenticate(ctx, base, call.header.Get("Authorization")); err != nil {
				return err
			}
		}
		return next(ctx)
	}
}

// authenticate resolves an Authorization header to the caller, in ctx.
func authenticate(ctx context.Context, base *core.Base, authorization string) (context.Context, error) {
	// The scheme is case-insensitive (RFC 9110 section 11.6.2): "bearer" and "BEARER" are Bearer.
	scheme, token, ok := strings.Cut(strings.TrimSpace(authorization), " ")
	token = strings.TrimSpace(token)
	if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" {
		return ctx, &apierr.Error{Code: errcode.Unauthenticated, Message: "an Authorization: Bearer token is required"}
	}
	caller, err := base.Authenticate(ctx, token)
	if err != nil {
		return ctx, err
	}
	return core.WithCaller(ctx, caller), nil
}

// knownProcedure names the procedure a path calls, or "unknown" when it calls none.
func knownProcedure(path string) string {
	if p, ok := jsonRoutes[strings.TrimPrefix(path, JSONPrefix)]; ok {
		return p
	}
	if _, ok := inputs[path]; ok {
		return path
	}
	return "unknown"
}

// clientTimeout reads the deadline a Connect (Connect-Timeout-Ms: milliseconds) or gRPC and
// gRPC-Web (Grpc-Timeout: at most eight digits and a unit) client sent with its call.
func clientTimeout(h http.Header) (time.Duration, bool) {
	if v := h.Get("Connect-Timeout-Ms"); v != "" {
		ms, err := strconv.ParseInt(v, 10, 64)
		if err != nil || ms < 0 || len(v) > 10 {
			return 0, false
		}
		return time.Duration(ms) * time.Millisecond, true
	}
	v := h.Get("Grpc-Timeout")
	if len(v) < 2 || len(v) > 9 {
		return 0, false
	}
	n, err := strconv.ParseInt(v[:len(v)-1], 10, 64)
	if err != nil || n < 0 {
		return 0, false
	}
	unit, ok := map[byte]time.Duration{'H': time.Hour, 'M': time.Minute, 'S': time.Second, 'm': time.Millisecond, 'u': time.Microsecond, 'n': time.Nanosecond}[v[len(v)-1]]
	if !ok {
		return 0, false
	}
	return time.Duration(n) * unit, true
}
