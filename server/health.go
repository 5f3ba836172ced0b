package server

import (
	"context"
	"encoding/json"
	"net/http"
	"sync/atomic"
	"time"

	"connectrpc.com/connect"
	"connectrpc.com/grpchealth"

	"better-compute.dev/compute/authz"
	"better-compute.dev/compute/store"
)

// healthProbePrincipal is a well-formed principal no one holds: the readiness probe asks the
// engine about it only to learn that the engine answers.
const healthProbePrincipal = "prn_readinessprobe"

// checkTimeout bounds each dependency probe, so a hung database answers 503, not a hung probe.
const checkTimeout = 2 * time.Second

// Health answers the load balancers: /healthz (the process lives), /readyz (the replica can
// serve: database reachable, schema at this binary's version, authorization answering, not
// draining) and grpc.health.v1 with the same readiness.
type Health struct {
	db       *store.DB
	authz    authz.Authorizer
	draining atomic.Bool
}

// NewHealth checks db and az.
func NewHealth(db *store.DB, az authz.Authorizer) *Health { return &Health{db: db, authz: az} }

// Drain makes readiness fail from now on (the replica is shutting down).
func (h *Health) Drain() { h.draining.Store(true) }

// Ready returns "" when the replica can serve, else a short reason (no secrets, no addresses).
func (h *Health) Ready(ctx context.Context) string {
	if h.draining.Load() {
		return "draining"
	}
	ctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	if err := h.db.Ping(ctx); err != nil {
		return "database unreachable"
	}
	current, err := h.db.SchemaCurrent(ctx)
	if err != nil {
		return "database unreachable"
	}
	if !current {
		return "database schema behind this binary (run bc-server migrate)"
	}
	if _, err := h.authz.Check(ctx, authz.Check{Principal: healthProbePrincipal, Permission: authz.PlatformManage, Object: authz.PlatformObject}); err != nil {
		return "authorization engine unavailable"
	}
	return ""
}

func (h *Health) healthz(w http.ResponseWriter, _ *http.Request) {
	writeHealth(w, http.StatusOK, "ok", "")
}

func (h *Health) readyz(w http.ResponseWriter, r *http.Request) {
	if reason := h.Ready(r.Context()); reason != "" {
		writeHealth(w, http.StatusServiceUnavailable, "unavailable", reason)
		return
	}
	writeHealth(w, http.StatusOK, "ok", "")
}

func writeHealth(w http.ResponseWriter, code int, status, reason string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	body := map[string]string{"status": status}
	if reason != "" {
		body["reason"] = reason
	}
	_ = json.NewEncoder(w).Encode(body)
}

// grpcChecker reports readiness through grpc.health.v1 for the whole server ("") and each
// service: SERVING exactly when /readyz answers 200.
type grpcChecker struct {
	h     *Health
	known map[string]bool
}

func (c grpcChecker) Check(ctx context.Context, req *grpchealth.CheckRequest) (*grpchealth.CheckResponse, error) {
	if req.Service != "" && !c.known[req.Service] {
		return nil, connect.NewError(connect.CodeNotFound, nil)
	}
	if c.h.Ready(ctx) != "" {
		return &grpchealth.CheckResponse{Status: grpchealth.StatusNotServing}, nil
	}
	return &grpchealth.CheckResponse{Status: grpchealth.StatusServing}, nil
}

// mountHealth adds /healthz, /readyz and grpc.health.v1 to mux.
func mountHealth(mux *http.ServeMux, h *Health) {
	known := make(map[string]bool, len(ServiceNames))
	for _, n := range ServiceNames {
		known[n] = true
	}
	mux.HandleFunc("GET /healthz", h.healthz)
	mux.HandleFunc("GET /readyz", h.readyz)
	mux.Handle(grpchealth.NewHandler(grpcChecker{h: h, known: known}))
}
