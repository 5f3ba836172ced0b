package bmc

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"better-compute.dev/compute/seal"
)

// TestRequestTimeoutNotStepTimeout: BMC I/O is bounded per request, not per step. Against a BMC
// that accepts TCP and never answers, one that answers the TLS handshake and never the request,
// and one that sends headers and then stalls its body, a probe whose step timeout is an hour
// fails as timed out (retryable) on its first request's bound: the caller's context, which
// would otherwise have ended it, is still live.
func TestRequestTimeoutNotStepTimeout(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { silent.Close() })
	go func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			go func() { <-release; c.Close() }()
		}
	}()
	noAnswer := httptest.NewTLSServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { <-release }))
	t.Cleanup(noAnswer.Close)
	stalledBody := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte(`{"@odata.id": "/redfish/v1/", `))
		w.(http.Flusher).Flush()
		<-release
	}))
	t.Cleanup(stalledBody.Close)
	// Cleanups run last-in first-out: the held handlers return before their servers close.
	t.Cleanup(func() { close(release) })
	for _, tc := range []struct {
		reason string
		addr   net.Addr
	}{
		{"accepts TCP, never answers", silent.Addr()},
		{"answers TLS, never the request", noAnswer.Listener.Addr()},
		{"sends headers, stalls the body", stalledBody.Listener.Addr()},
	} {
		t.Run(tc.reason, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
			defer cancel()
			r := &Runner{StepTimeout: time.Hour, RequestTimeout: 300 * time.Millisecond, Outbound: testOutbound}
			target := Target{Address: "127.0.0.1", Port: tc.addr.(*net.TCPAddr).Port, Protocol: Redfish,
				Username: "u", Password: seal.Secret("pw"), InsecureTLS: true}
			_, err := r.Probe(ctx, target)
			if !errors.Is(err, ErrTimeout) || !Retryable(err) {
				t.Fatalf("probe: %v, want a retryable timeout", err)
			}
			if ctx.Err() != nil {
				t.Fatal("the caller's context ended first: the request was not bounded on its own")
			}
		})
	}
}
