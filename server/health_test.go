package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"connectrpc.com/connect"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"better-compute.dev/compute/app"
	"better-compute.dev/compute/gen/go/bettercompute/compute/v1/computev1connect"
	"better-compute.dev/compute/seal"
	"better-compute.dev/compute/store/storetest"
	"better-compute.dev/compute/testwait"
)

type probe struct {
	code   int
	reason string
}

func get(t *testing.T, url string) probe {
	t.Helper()
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	var body struct{ Status, Reason string }
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatalf("GET %s: body: %v", url, err)
	}
	return probe{resp.StatusCode, body.Reason}
}

func grpcHealth(t *testing.T, base, service string) healthpb.HealthCheckResponse_ServingStatus {
	t.Helper()
	c := connect.NewClient[healthpb.HealthCheckRequest, healthpb.HealthCheckResponse](h2c(), base+"/grpc.health.v1.Health/Check", connect.WithGRPC())
	r, err := c.CallUnary(context.Background(), connect.NewRequest(&healthpb.HealthCheckRequest{Service: service}))
	if err != nil {
		t.Fatalf("grpc health %q: %v", service, err)
	}
	return r.Msg.GetStatus()
}

func startOn(t *testing.T, dbURL string, drain time.Duration) *app.App {
	t.Helper()
	key, err := seal.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	a, err := app.Start(context.Background(), app.Config{Listen: "127.0.0.1:0", DatabaseURL: dbURL, SealKey: key.Encode(),
		OpenFGADatastore: "memory", Replica: "test", DrainDelay: drain, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestReadinessThroughDatabaseOutage: while the database is down /readyz and gRPC health say
// not ready and /healthz stays 200; both recover when it is back. A schema behind the binary
// and a closed authorization engine are not ready either.
func TestReadinessThroughDatabaseOutage(t *testing.T) {
	srv := storetest.StartServer(t)
	a := startOn(t, srv.URL, 0)
	t.Cleanup(func() { a.Close(context.Background()) })
	ready := func(want int, reason string) {
		t.Helper()
		if p := get(t, a.URL+"/readyz"); p.code != want || p.reason != reason {
			t.Errorf("readyz = %d %q, want %d %q", p.code, p.reason, want, reason)
		}
		if p := get(t, a.URL+"/healthz"); p.code != http.StatusOK {
			t.Errorf("healthz = %d, want 200", p.code)
		}
		wantGRPC := healthpb.HealthCheckResponse_SERVING
		if want != http.StatusOK {
			wantGRPC = healthpb.HealthCheckResponse_NOT_SERVING
		}
		for _, svc := range []string{"", computev1connect.LoadBalancerServiceName} {
			if got := grpcHealth(t, a.URL, svc); got != wantGRPC {
				t.Errorf("grpc health %q = %v, want %v", svc, got, wantGRPC)
			}
		}
	}
	ready(http.StatusOK, "")

	srv.Stop()
	ready(http.StatusServiceUnavailable, "database unreachable")
	srv.Start()
	// The pool's dead connections are replaced on use; readiness returns without a restart.
	testwait.Until(t, 30*time.Second, "ready after the database restarted", func() (bool, string) {
		p := get(t, a.URL+"/readyz")
		return p.code == http.StatusOK, fmt.Sprintf("%+v", p)
	})
	ready(http.StatusOK, "")

	// A schema missing this binary's last migration: not ready until migrated.
	var last string
	if err := a.DB.Q().QueryRow(context.Background(), `DELETE FROM schema_migrations WHERE version = (SELECT max(version) FROM schema_migrations) RETURNING version`).Scan(&last); err != nil {
		t.Fatal(err)
	}
	ready(http.StatusServiceUnavailable, "database schema behind this binary (run bc-server migrate)")
	if _, err := a.DB.Q().Exec(context.Background(), `INSERT INTO schema_migrations (version) VALUES ($1)`, last); err != nil {
		t.Fatal(err)
	}
	ready(http.StatusOK, "")

	// An unknown gRPC service name is NOT_FOUND, not SERVING.
	c := connect.NewClient[healthpb.HealthCheckRequest, healthpb.HealthCheckResponse](h2c(), a.URL+"/grpc.health.v1.Health/Check", connect.WithGRPC())
	if _, err := c.CallUnary(context.Background(), connect.NewRequest(&healthpb.HealthCheckRequest{Service: "no.Such"})); connect.CodeOf(err) != connect.CodeNotFound {
		t.Errorf("unknown service: %v, want not_found", err)
	}

	// An authorization engine that cannot answer: not ready.
	if err := a.Authz.Close(); err != nil {
		t.Fatal(err)
	}
	ready(http.StatusServiceUnavailable, "authorization engine unavailable")
}

// TestReadinessWhileDraining: once Close begins, /readyz answers 503 "draining" and gRPC
// health NOT_SERVING while the listener still serves, for the drain delay.
func TestReadinessWhileDraining(t *testing.T) {
	schema := storetest.NewSchema(t)
	a := startOn(t, schema.URL, time.Minute)
	if p := get(t, a.URL+"/readyz"); p.code != http.StatusOK {
		t.Fatalf("readyz before drain = %+v", p)
	}
	ctx, cancel := context.WithCancel(context.Background())
	closed := make(chan struct{})
	go func() { defer close(closed); a.Close(ctx) }()
	var p probe
	testwait.Until(t, 30*time.Second, "not ready while draining", func() (bool, string) {
		p = get(t, a.URL+"/readyz")
		return p.code != http.StatusOK, fmt.Sprintf("%+v", p)
	})
	if p.code != http.StatusServiceUnavailable || p.reason != "draining" {
		t.Errorf("readyz while draining = %+v, want 503 draining", p)
	}
	if got := grpcHealth(t, a.URL, ""); got != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Errorf("grpc health while draining = %v", got)
	}
	if p := get(t, a.URL+"/healthz"); p.code != http.StatusOK {
		t.Errorf("healthz while draining = %d", p.code)
	}
	cancel()
	<-closed
}
