package authz

import (
	"context"
	"fmt"
	"testing"
)

// Benchmarks report ns/op for the lead's overhead ratios; they assert only
// that every answer is the expected one.

func benchFixture(b *testing.B, a Authorizer) Check {
	b.Helper()
	must(b, a.GrantTenantRole(context.Background(), tenantA, prnViewer, RoleViewer))
	return Check{prnViewer, LoadBalancersRead, Object{TypeProviderLoadBalancer, "plb_bench", tenantA}}
}

// BenchmarkCheck is one Check through the embedded engine on the memory
// datastore: a tenant role reached through the contextual tenant tuple.
func BenchmarkCheck(b *testing.B) {
	a := newMemory(b)
	c := benchFixture(b, a)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		ok, err := a.Check(ctx, c)
		if err != nil || !ok {
			b.Fatalf("check: %v, %v", ok, err)
		}
	}
}

// BenchmarkCheckDirectGrant is one Check answered by a direct object grant.
func BenchmarkCheckDirectGrant(b *testing.B) {
	a := newMemory(b)
	obj := Object{TypeInstance, "ins_bench", tenantA}
	must(b, a.GrantObject(context.Background(), obj, "prn_bench", LevelManager))
	c := Check{"prn_bench", InstancesUpdate, obj}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		ok, err := a.Check(ctx, c)
		if err != nil || !ok {
			b.Fatalf("check: %v, %v", ok, err)
		}
	}
}

// BenchmarkBatchCheck50 is one full engine batch (50 items) on memory; divide
// ns/op by 50 for the cost per item of a list call.
func BenchmarkBatchCheck50(b *testing.B) {
	a := newMemory(b)
	benchFixture(b, a)
	cs := make([]Check, MaxBatch)
	for i := range cs {
		cs[i] = Check{prnViewer, LoadBalancersRead, Object{TypeProviderLoadBalancer, fmt.Sprintf("plb_%d", i), tenantA}}
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		res, err := a.BatchCheck(ctx, cs)
		if err != nil || !res[MaxBatch-1] {
			b.Fatalf("batch: %v", err)
		}
	}
}

// BenchmarkCheckRemote is one Check through the SDK over HTTP to an in-process
// engine: the client and transport share of a production check.
func BenchmarkCheckRemote(b *testing.B) {
	hs := serveEngineB(b)
	r := newRemote(b, hs)
	c := benchFixture(b, r)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		ok, err := r.Check(ctx, c)
		if err != nil || !ok {
			b.Fatalf("check: %v, %v", ok, err)
		}
	}
}
