package authz

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	openfgav1 "github.com/openfga/api/proto/openfga/v1"
	httpmiddleware "github.com/openfga/openfga/pkg/middleware/http"
	"github.com/openfga/openfga/pkg/server"
	serverErrors "github.com/openfga/openfga/pkg/server/errors"
	"github.com/openfga/openfga/pkg/storage/memory"
	"google.golang.org/grpc/status"
)

const testToken = "test-token-not-a-secret"

// serveEngine runs a fresh in-process OpenFGA server behind OpenFGA's own HTTP
// API (the grpc-gateway mapping, with OpenFGA's error encoding), requiring
// testToken as bearer credential, as a cluster would.
func serveEngine(t testing.TB) *httptest.Server {
	t.Helper()
	srv, err := server.NewServerWithOpts(server.WithDatastore(memory.New()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	mux := runtime.NewServeMux(
		runtime.WithForwardResponseOption(httpmiddleware.HTTPResponseModifier),
		runtime.WithErrorHandler(func(ctx context.Context, _ *runtime.ServeMux, _ runtime.Marshaler, w http.ResponseWriter, r *http.Request, e error) {
			code := serverErrors.ConvertToEncodedErrorCode(status.Convert(e))
			httpmiddleware.CustomHTTPErrorHandler(ctx, w, r, serverErrors.NewEncodedError(code, e.Error()))
		}),
	)
	if err := openfgav1.RegisterOpenFGAServiceHandlerServer(context.Background(), mux, srv); err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+testToken {
			http.Error(w, `{"code":"unauthenticated","message":"unauthenticated"}`, http.StatusUnauthorized)
			return
		}
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	return hs
}

func newRemote(t testing.TB, url string) *Remote {
	t.Helper()
	r, err := NewRemote(context.Background(), RemoteOptions{APIURL: url, Token: testToken})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return r
}

func TestRemoteConformance(t *testing.T) {
	t.Parallel()
	runConformance(t, func(t *testing.T) Authorizer { return newRemote(t, serveEngine(t).URL) })
}

func TestRemoteReusesStoreAndModel(t *testing.T) {
	t.Parallel()
	hs := serveEngine(t)
	first := newRemote(t, hs.URL)
	second := newRemote(t, hs.URL)
	if !first.ModelWritten() || second.ModelWritten() {
		t.Errorf("model written: first %v (want true), second %v (want false)", first.ModelWritten(), second.ModelWritten())
	}
	if first.StoreID() != second.StoreID() || first.ModelID() != second.ModelID() {
		t.Errorf("second start resolved store %s model %s, want %s %s", second.StoreID(), second.ModelID(), first.StoreID(), first.ModelID())
	}
	// Grants made through one replica are seen by the other at once.
	ctx := context.Background()
	must(t, first.GrantTenantRole(ctx, tenantA, prnViewer, RoleViewer))
	ok, err := second.Check(ctx, Check{prnViewer, PoolsRead, TenantObject(tenantA)})
	if err != nil || !ok {
		t.Errorf("check through the second replica: %v, %v", ok, err)
	}
	pinned, err := NewRemote(ctx, RemoteOptions{APIURL: hs.URL, Token: testToken, StoreID: first.StoreID()})
	if err != nil {
		t.Fatal(err)
	}
	defer pinned.Close()
	if pinned.StoreID() != first.StoreID() || pinned.ModelWritten() {
		t.Errorf("start with a store id: store %s, wrote %v", pinned.StoreID(), pinned.ModelWritten())
	}
}

func TestRemoteFailsClosed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	hs := serveEngine(t)
	r := newRemote(t, hs.URL)
	must(t, r.GrantTenantRole(ctx, tenantA, prnAdmin, RoleAdmin))
	c := Check{prnAdmin, LoadBalancersManage, TenantObject(tenantA)}
	if ok, err := r.Check(ctx, c); err != nil || !ok {
		t.Fatalf("before stop: %v, %v", ok, err)
	}
	hs.Close()
	// An answer asked for before the outage may be served until DecisionTTL has passed; a
	// question the cache cannot answer fails closed at once.
	other := Check{prnAdmin, LoadBalancersRead, TenantObject(tenantA)}
	if ok, err := r.Check(ctx, other); !errors.Is(err, ErrUnavailable) || ok {
		t.Errorf("uncached Check with the engine stopped = %v, %v; want false, ErrUnavailable", ok, err)
	}
	r.cache.now = func() time.Time { return time.Now().Add(DecisionTTL) }
	if ok, err := r.Check(ctx, c); !errors.Is(err, ErrUnavailable) || ok {
		t.Errorf("Check with the engine stopped = %v, %v; want false, ErrUnavailable", ok, err)
	}
	if res, err := r.BatchCheck(ctx, []Check{c}); !errors.Is(err, ErrUnavailable) || res != nil {
		t.Errorf("BatchCheck with the engine stopped = %v, %v; want nil, ErrUnavailable", res, err)
	}
	if err := r.GrantTenantRole(ctx, tenantA, prnAdmin, RoleEditor); !errors.Is(err, ErrUnavailable) {
		t.Errorf("grant with the engine stopped: %v", err)
	}
	if _, err := NewRemote(ctx, RemoteOptions{APIURL: hs.URL, Token: testToken}); !errors.Is(err, ErrUnavailable) {
		t.Errorf("start with the engine stopped: %v", err)
	}
}

func TestRemoteBadToken(t *testing.T) {
	t.Parallel()
	hs := serveEngine(t)
	_, err := NewRemote(context.Background(), RemoteOptions{APIURL: hs.URL, Token: "wrong-token-value"})
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("start with a wrong token: %v, want ErrUnavailable", err)
	}
	if strings.Contains(err.Error(), "wrong-token-value") {
		t.Errorf("the error names the token: %v", err)
	}
}

// serveEngineB is serveEngine for benchmarks, returning the URL.
func serveEngineB(b *testing.B) string { return serveEngine(b).URL }
