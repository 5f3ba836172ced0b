package authz

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"better-compute.dev/compute/store"
)

func testDatabaseURL() string {
	if u := os.Getenv("BC_TEST_DATABASE_URL"); u != "" {
		return u
	}
	return "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
}

var schemaSeq atomic.Int64

// testSchema names a fresh schema for one test and drops it afterwards.
func testSchema(t *testing.T) string {
	t.Helper()
	name := fmt.Sprintf("authz_test_%d_%d", os.Getpid(), schemaSeq.Add(1))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		conn, err := store.Connect(ctx, testDatabaseURL())
		if err != nil {
			t.Errorf("drop schema %s: %v", name, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+store.QuoteIdentifier(name)+" CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", name, err)
		}
	})
	return name
}

func newPostgres(t *testing.T, schema string) *Embedded {
	t.Helper()
	start := time.Now()
	a, err := NewEmbedded(context.Background(), EmbeddedOptions{Datastore: DatastorePostgres, DatabaseURL: testDatabaseURL(), Schema: schema})
	if err != nil {
		t.Fatalf("NewEmbedded(postgres): %v (is PostgreSQL up at BC_TEST_DATABASE_URL?)", err)
	}
	t.Logf("NewEmbedded(postgres) took %v", time.Since(start))
	t.Cleanup(func() { _ = a.Close() })
	return a
}

func TestEmbeddedPostgresConformance(t *testing.T) {
	t.Parallel()
	runConformance(t, func(t *testing.T) Authorizer { return newPostgres(t, testSchema(t)) })
}

// TestEmbeddedPostgresReplicasShareGrants starts two engines on one schema, as
// two bc-server replicas in dev mode: the second reuses the store and model and
// sees the first one's grants at once.
func TestEmbeddedPostgresReplicasShareGrants(t *testing.T) {
	t.Parallel()
	schema := testSchema(t)
	first := newPostgres(t, schema)
	second := newPostgres(t, schema)
	if !first.ModelWritten() || second.ModelWritten() {
		t.Errorf("model written: first %v (want true), second %v (want false)", first.ModelWritten(), second.ModelWritten())
	}
	if first.StoreID() != second.StoreID() || first.ModelID() != second.ModelID() {
		t.Errorf("second replica: store %s model %s, want %s %s", second.StoreID(), second.ModelID(), first.StoreID(), first.ModelID())
	}
	ctx := context.Background()
	lb := Object{TypeProviderLoadBalancer, "plb_1", tenantA}
	must(t, first.GrantTenantRole(ctx, tenantA, prnEditor, RoleEditor))
	if ok, err := second.Check(ctx, Check{prnEditor, LoadBalancersManage, lb}); err != nil || !ok {
		t.Errorf("grant through the first replica, check through the second: %v, %v", ok, err)
	}
	must(t, second.RevokeTenantRole(ctx, tenantA, prnEditor, RoleEditor))
	if ok, err := first.Check(ctx, Check{prnEditor, LoadBalancersManage, lb}); err != nil || ok {
		t.Errorf("revoke through the second replica, check through the first: %v, %v", ok, err)
	}
	must(t, first.Close())
	if ok, err := first.Check(ctx, Check{prnEditor, LoadBalancersRead, lb}); !errors.Is(err, ErrUnavailable) || ok {
		t.Errorf("check on a closed replica = %v, %v; want false, ErrUnavailable", ok, err)
	}
	// The other replica keeps working: the grants live in the database.
	if _, err := second.Check(ctx, Check{prnEditor, LoadBalancersRead, lb}); err != nil {
		t.Errorf("the remaining replica: %v", err)
	}
}

func TestEmbeddedOptionsErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		reason string
		opts   EmbeddedOptions
		want   error
	}{
		{"an unknown datastore", EmbeddedOptions{Datastore: "mysql"}, ErrInvalid},
		{"postgres without a URL", EmbeddedOptions{Datastore: DatastorePostgres}, ErrInvalid},
		{"a schema that is not an identifier", EmbeddedOptions{Datastore: DatastorePostgres, DatabaseURL: testDatabaseURL(), Schema: "x; drop"}, ErrInvalid},
		{"a URL that is not postgres", EmbeddedOptions{Datastore: DatastorePostgres, DatabaseURL: "mysql://x"}, ErrInvalid},
		{"an unreachable database", EmbeddedOptions{Datastore: DatastorePostgres, DatabaseURL: "postgres://postgres:hunter2@127.0.0.1:1/none?sslmode=disable&connect_timeout=2"}, ErrUnavailable},
	}
	for _, tc := range cases {
		a, err := NewEmbedded(context.Background(), tc.opts)
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: err = %v, want %v", tc.reason, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%s: the error names the password: %v", tc.reason, err)
		}
		if a != nil {
			_ = a.Close()
		}
	}
}

// TestEmbeddedPostgresConcurrentBatches runs several large batches at once on
// the postgres datastore: they must all finish with the right answers, not wait
// on each other for pooled connections.
func TestEmbeddedPostgresConcurrentBatches(t *testing.T) {
	t.Parallel()
	a := newPostgres(t, testSchema(t))
	grantFixture(t, a)
	checks := make([]Check, 2*MaxBatch)
	for i := range checks {
		checks[i] = Check{prnEditor, InstancesUpdate, Object{TypeInstance, fmt.Sprintf("ins_%d", i), tenantA}}
	}
	const callers = 6
	errs := make(chan error, callers)
	for range callers {
		go func() {
			res, err := a.BatchCheck(context.Background(), checks)
			if err == nil {
				for i, ok := range res {
					if !ok {
						err = fmt.Errorf("check %d denied", i)
						break
					}
				}
			}
			errs <- err
		}()
	}
	for range callers {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}
