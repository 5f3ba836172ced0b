package server_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"better-compute.dev/compute/app/apptest"
)

// FuzzCreateUpdate sends arbitrary bodies to create and update through the JSON mapping. No input
// may yield INTERNAL, and a refused call writes nothing (no load balancer, no event, no quota).
// `go test` runs the seeds; `go test -fuzz FuzzCreateUpdate ./server` explores.
func FuzzCreateUpdate(f *testing.F) {
	s := apptest.Start(f)
	tn := s.NewTenant(f, "acme", "editor")
	seeds := []string{
		`{"tenantId":"acme","poolId":"` + tn.PoolID + `","name":"web","region":"nyc3","targets":{"pool":true},"forwarding":[{"entryProtocol":"http","entryPort":80,"targetProtocol":"http","targetPort":8080}],"idempotencyKey":"k"}`,
		`{"tenantId":"acme","poolId":"` + tn.PoolID + `","name":"web","scope":"global","targets":{"loadBalancerIds":["plb_01m8vjp5r2ph80akzhx2janz7c"]},"forwarding":[{"entryProtocol":"https","entryPort":443,"targetProtocol":"https","targetPort":443,"tlsPassthrough":true}],"domains":[{"name":"x"}],"idempotencyKey":"g"}`,
		`{"tenantId":"acme","poolId":"` + tn.PoolID + `","name":"web","targets":{"instanceIds":["inst_01m8vjp5r2ph80akzhx2janz7c"]},"forwarding":[],"healthCheck":{"protocol":"tcp","port":1,"intervalSeconds":300},"idempotencyKey":"i"}`,
		`{"tenantId":"acme","loadBalancerId":"plb_01m8vjp5r2ph80akzhx2janz7c","sourceRanges":{"allow":["10.0.0.0/8","::1"]}}`,
		`{"tenantId":"acme","poolId":"` + tn.PoolID + `","name":"a","region":"sfo3","subnetId":"snet_01m8vjp5r2ph80akzhx2janz7c","targets":{"pool":true},"forwarding":[{"entryProtocol":"udp","entryPort":53,"targetProtocol":"udp","targetPort":53}],"stickySessions":{"cookieName":"c","ttlSeconds":1},"idempotencyKey":"s"}`,
		`{"forwarding":[{"entryPort":1e100}]}`, `{"targets":{"pool":"yes"}}`, `{"name":"\u0000"}`, `{}`, `[`,
	}
	for _, seed := range seeds {
		f.Add("create", seed)
		f.Add("update", seed)
	}
	f.Fuzz(func(t *testing.T, method, body string) {
		if method != "create" {
			method = "update"
		}
		before := counts(t, s)
		status, got := s.PostJSON(t, "/api/compute/loadBalancers/"+method, tn.Token, body)
		if status >= 500 || got["code"] == "INTERNAL" {
			t.Fatalf("%s %q: %d %v", method, body, status, got)
		}
		if status != http.StatusOK && counts(t, s) != before {
			t.Fatalf("%s %q refused (%v) but wrote: %v -> %v", method, body, got["code"], before, counts(t, s))
		}
	})
}

func counts(t *testing.T, s *apptest.Stack) string {
	var lbs, evs, used int
	err := s.App.DB.Q().QueryRow(context.Background(),
		`SELECT (SELECT count(*) FROM load_balancers), (SELECT count(*) FROM events) + (SELECT count(*) FROM event_inbox), (SELECT coalesce(sum(used), 0) FROM quotas)`).Scan(&lbs, &evs, &used)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%d/%d/%d", lbs, evs, used)
}
