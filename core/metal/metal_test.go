package metal_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"

	"better-compute.dev/compute/apierr"
	"better-compute.dev/compute/contract"
	"better-compute.dev/compute/core"
	"better-compute.dev/compute/core/events"
	v1 "better-compute.dev/compute/gen/go/bettercompute/compute/v1"
	"better-compute.dev/compute/gen/go/bettercompute/compute/v1/errcode"
	"better-compute.dev/compute/lifecycle"
	"better-compute.dev/compute/metal"
	"better-compute.dev/compute/netguard"
	"better-compute.dev/compute/server"
	"better-compute.dev/compute/store"
)

// TestMetalStateTableThroughAPI tries every verb from every state through the API: an allowed
// move records exactly what the state table says, with its event and a work item; a refused one
// is INVALID_STATE naming the current state and changes nothing.
func TestMetalStateTableThroughAPI(t *testing.T) {
	t.Parallel()
	e := newMetalEnv(t)
	ctx := metalCtx(t)
	for i, from := range metal.States() {
		node := e.enroll(t, fmt.Sprintf("node-%d", i), fmt.Sprintf("10.0.0.%d", i+1))
		t.Run(string(from), func(t *testing.T) {
			t.Parallel()
			for _, verb := range metal.Verbs() {
				e.force(t, node.GetId(), from)
				before := e.row(t, node.GetId())
				got, err := metalVerbCall(e.svc, e.editorA, verb, e.tenantA, node.GetId())
				tr, moveErr := metal.Move(from, verb)
				after := e.row(t, node.GetId())
				name := string(from) + "/" + string(verb)
				if moveErr != nil {
					pe := metalWantErr(t, name, err, errcode.InvalidState, string(from))
					if !strings.Contains(pe.Message, "it is "+string(from)) {
						t.Errorf("%s: message %q does not name the state", name, pe.Message)
					}
					if after.State != string(from) || after.Version != before.Version {
						t.Errorf("%s: refused move changed the node: %s v%d -> %s v%d", name, before.State, before.Version, after.State, after.Version)
					}
					continue
				}
				if err != nil {
					t.Errorf("%s: want a move to %s, got %v", name, tr.To, err)
					continue
				}
				if got.GetState() != string(tr.To) || after.State != string(tr.To) || after.Version != before.Version+1 {
					t.Errorf("%s: view %s, row %s v%d; want %s v%d", name, got.GetState(), after.State, after.Version, tr.To, before.Version+1)
				}
				if !after.StateEnteredAt.After(before.StateEnteredAt) && !after.StateEnteredAt.Equal(before.StateEnteredAt) {
					t.Errorf("%s: state entered time went back", name)
				}
				wantPending := store.MetalWorkNone
				if verb == metal.Retire {
					wantPending = store.MetalWorkRetire
				}
				if after.PendingWork != wantPending {
					t.Errorf("%s: pending work %q, want %q", name, after.PendingWork, wantPending)
				}
				if verb == metal.Abort && after.FailureReason != "aborted while "+string(from) {
					t.Errorf("%s: failure reason %q", name, after.FailureReason)
				}
				if verb == metal.Deploy && after.Image != "ubuntu-24.04" {
					t.Errorf("%s: image %q not recorded", name, after.Image)
				}
				wantAllowed := []string{}
				for _, v := range metal.Allowed(tr.To) {
					wantAllowed = append(wantAllowed, string(v))
				}
				if diff := cmp.Diff(wantAllowed, append([]string{}, got.GetAllowedVerbs()...)); diff != "" {
					t.Errorf("%s: allowed verbs (-want +got):\n%s", name, diff)
				}
				w, err := store.GetWorkItem(ctx, e.db, contract.MetalKind, node.GetId())
				if err != nil || w.DueAt == nil {
					t.Errorf("%s: no due work item: %+v, %v", name, w, err)
				}
				evs, err := store.ListEvents(ctx, e.db.Q(), e.tenantA, 0, 1000, node.GetId())
				if err != nil {
					t.Fatal(err)
				}
				last := evs[len(evs)-1]
				if last.Type != lifecycle.EventMetalMoved || last.Data["verb"] != string(verb) || last.Data["from"] != string(from) || last.Data["to"] != string(tr.To) {
					t.Errorf("%s: last event %+v", name, last)
				}
			}
		})
	}
}

func TestMetalUnknownVerb(t *testing.T) {
	t.Parallel()
	e := newMetalEnv(t)
	n := e.enroll(t, "odd", "10.1.0.1")
	for _, verb := range []metal.Verb{"reboot", "", "Deploy"} {
		_, err := e.svc.Metal.MoveNode(e.editorA, e.tenantA, n.GetId(), verb, "")
		metalWantErr(t, "verb "+string(verb), err, errcode.InvalidInput, "verb")
	}
	if r := e.row(t, n.GetId()); r.State != string(metal.Enrolled) || r.Version != 1 {
		t.Errorf("an unknown verb changed the node: %+v", r)
	}
}

// TestMetalConcurrentVerbs races verbs on one node: exactly one wins and the others see the
// state it recorded.
func TestMetalConcurrentVerbs(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		reason string
		from   metal.State
		verbs  []metal.Verb // one goroutine each
	}{
		{"deploy against release on a ready node", metal.Ready,
			[]metal.Verb{metal.Deploy, metal.Release, metal.Deploy, metal.Release, metal.Deploy, metal.Release, metal.Deploy, metal.Release}},
		{"rescue against release on a deployed node (both allowed)", metal.Deployed,
			[]metal.Verb{metal.RescueVerb, metal.Release, metal.RescueVerb, metal.Release, metal.RescueVerb, metal.Release, metal.RescueVerb, metal.Release}},
		{"eight aborts of one deploying node", metal.Deploying,
			[]metal.Verb{metal.Abort, metal.Abort, metal.Abort, metal.Abort, metal.Abort, metal.Abort, metal.Abort, metal.Abort}},
	} {
		t.Run(tc.reason, func(t *testing.T) {
			t.Parallel()
			e := newMetalEnv(t)
			n := e.enroll(t, "racer", "10.2.0.1")
			e.force(t, n.GetId(), tc.from)
			before := e.row(t, n.GetId())
			start := make(chan struct{})
			type result struct {
				verb metal.Verb
				node *v1.MetalNode
				err  error
			}
			results := make([]result, len(tc.verbs))
			var wg sync.WaitGroup
			for i, verb := range tc.verbs {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					node, err := metalVerbCall(e.svc, e.editorA, verb, e.tenantA, n.GetId())
					results[i] = result{verb, node, err}
				}()
			}
			close(start)
			wg.Wait()
			var winner *result
			for i := range results {
				r := &results[i]
				if r.err == nil {
					if winner != nil {
						t.Fatalf("two verbs won: %s (%s) and %s (%s)", winner.verb, winner.node.GetState(), r.verb, r.node.GetState())
					}
					winner = r
					continue
				}
				pe := metalWantErr(t, string(r.verb), r.err, errcode.InvalidState, "")
				if pe.StateReason != string(tc.from) {
					// Refused against the state the winner recorded (or, for a verb the
					// table never allows from the start state, against that one).
					if _, err := metal.Move(metal.State(pe.StateReason), r.verb); err == nil {
						t.Errorf("%s refused in %s, which allows it", r.verb, pe.StateReason)
					}
				}
			}
			if winner == nil {
				t.Fatal("no verb won")
			}
			tr, _ := metal.Move(tc.from, winner.verb)
			after := e.row(t, n.GetId())
			if after.State != string(tr.To) || after.Version != before.Version+1 {
				t.Errorf("after the race: %s v%d, want %s v%d", after.State, after.Version, tr.To, before.Version+1)
			}
			evs, err := store.ListEvents(context.Background(), e.db.Q(), e.tenantA, 0, 1000, n.GetId())
			if err != nil {
				t.Fatal(err)
			}
			moves := 0
			for _, ev := range evs {
				if ev.Type == lifecycle.EventMetalMoved {
					moves++
				}
			}
			if moves != 1 {
				t.Errorf("%d move events, want 1", moves)
			}
		})
	}
}

// TestMetalAuthorization: another tenant's node is NOT_FOUND, indistinguishable from a missing
// one; a viewer reads but cannot move; list checks the tenant then each node.
func TestMetalAuthorization(t *testing.T) {
	t.Parallel()
	e := newMetalEnv(t)
	n := e.enroll(t, "secret-box", "10.3.0.1")
	missing := "mnode_01hzzzzzzzzzzzzzzzzzzzzzzz"
	type call func(ctx context.Context, tenant, node string) error
	calls := map[string]call{
		"get": func(ctx context.Context, tenant, node string) error {
			_, err := e.svc.Metal.GetNode(ctx, &v1.GetNodeRequest{TenantId: tenant, NodeId: node})
			return err
		},
		"updateCredentials": func(ctx context.Context, tenant, node string) error {
			_, err := e.svc.Metal.UpdateNodeCredentials(ctx, &v1.UpdateNodeCredentialsRequest{TenantId: tenant, NodeId: node, Username: "u", Password: "p"})
			return err
		},
	}
	for _, v := range metal.Verbs() {
		calls[string(v)] = func(ctx context.Context, tenant, node string) error {
			_, err := metalVerbCall(e.svc, ctx, v, tenant, node)
			return err
		}
	}
	for name, c := range calls {
		for _, tc := range []struct {
			reason         string
			ctx            context.Context
			tenant, nodeID string
		}{
			{"tenant B naming tenant A", e.editorB, e.tenantA, n.GetId()},
			{"tenant B naming itself", e.editorB, e.tenantB, n.GetId()},
			{"tenant A naming tenant B", e.editorA, e.tenantB, n.GetId()},
			{"a node that does not exist", e.editorA, e.tenantA, missing},
		} {
			err := c(tc.ctx, tc.tenant, tc.nodeID)
			pe := metalWantErr(t, name+": "+tc.reason, err, errcode.NotFound, "")
			if pe.Message != "metal node "+tc.nodeID+" not found" {
				t.Errorf("%s: %s: message %q tells cases apart", name, tc.reason, pe.Message)
			}
		}
	}
	if _, err := e.svc.Metal.GetNode(e.viewerA, &v1.GetNodeRequest{TenantId: e.tenantA, NodeId: n.GetId()}); err != nil {
		t.Errorf("viewer get: %v", err)
	}
	_, err := e.svc.Metal.InspectNode(e.viewerA, &v1.InspectNodeRequest{TenantId: e.tenantA, NodeId: n.GetId()})
	metalWantErr(t, "viewer inspect", err, errcode.AccessDenied, "")
	_, err = e.svc.Metal.EnrollNode(e.viewerA, metalEnrollRequest(e.tenantA, "viewer-node", "10.3.0.2"))
	metalWantErr(t, "viewer enroll", err, errcode.AccessDenied, "")
	_, err = e.svc.Metal.EnrollNode(e.editorB, metalEnrollRequest(e.tenantA, "intruder", "10.3.0.3"))
	metalWantErr(t, "tenant B enrolls into A", err, errcode.AccessDenied, "")
	_, err = e.svc.Metal.ListNodes(e.editorB, &v1.ListNodesRequest{TenantId: e.tenantA})
	metalWantErr(t, "tenant B lists A", err, errcode.AccessDenied, "")
	if _, err := e.svc.Metal.GetNode(context.Background(), &v1.GetNodeRequest{TenantId: e.tenantA, NodeId: n.GetId()}); apierr.CodeOf(err) != errcode.Unauthenticated {
		t.Errorf("no caller: %v", err)
	}

	list, err := e.svc.Metal.ListNodes(e.viewerA, &v1.ListNodesRequest{TenantId: e.tenantA})
	if err != nil || len(list) != 1 || list[0].GetId() != n.GetId() {
		t.Errorf("viewer list: %v, %v", list, err)
	}
	bList, err := e.svc.Metal.ListNodes(e.editorB, &v1.ListNodesRequest{TenantId: e.tenantB})
	if err != nil || len(bList) != 0 {
		t.Errorf("tenant B sees %v, %v", bList, err)
	}
	filtered, err := e.svc.Metal.ListNodes(e.viewerA, &v1.ListNodesRequest{TenantId: e.tenantA, State: "ready"})
	if err != nil || len(filtered) != 0 {
		t.Errorf("state filter: %v, %v", filtered, err)
	}
	_, err = e.svc.Metal.ListNodes(e.viewerA, &v1.ListNodesRequest{TenantId: e.tenantA, State: "broken"})
	metalWantErr(t, "unknown state filter", err, errcode.InvalidInput, "state")
}

func TestMetalEnroll(t *testing.T) {
	t.Parallel()
	e := newMetalEnv(t)
	ctx := metalCtx(t)
	n := e.enroll(t, "rack1-u12", "bmc-12.example.net")
	want := &v1.MetalBmc{Address: "bmc-12.example.net", Port: 443, Protocol: "redfish", Username: "admin", CredentialsSet: true, InsecureTls: true}
	if diff := cmp.Diff(want, n.GetBmc(), protocmp.Transform()); diff != "" {
		t.Errorf("bmc view (-want +got):\n%s", diff)
	}
	if n.GetState() != "enrolled" || fmt.Sprint(n.GetAllowedVerbs()) != "[inspect retire]" {
		t.Errorf("new node: %s, allowed %v", n.GetState(), n.GetAllowedVerbs())
	}
	row := e.row(t, n.GetId())
	if strings.Contains(string(row.BMCPasswordSealed), metalPassword) || row.PendingWork != store.MetalWorkProbe {
		t.Errorf("row: pending %q, sealed value shows the password: %v", row.PendingWork, strings.Contains(string(row.BMCPasswordSealed), metalPassword))
	}
	if pw, err := e.ring.OpenSecret(string(row.BMCPasswordSealed), []byte(n.GetId())); err != nil || pw.Reveal() != metalPassword {
		t.Errorf("sealed password does not open with the node id: %v", err)
	}
	if _, err := e.ring.OpenSecret(string(row.BMCPasswordSealed), []byte("mnode_other")); err == nil {
		t.Error("sealed password opens for another node id")
	}
	if w, err := store.GetWorkItem(ctx, e.db, contract.MetalKind, n.GetId()); err != nil || w.DueAt == nil {
		t.Errorf("enroll queued no probe: %+v, %v", w, err)
	}

	ipmi := metalEnrollRequest(e.tenantA, "ipmi-box", "192.0.2.7")
	ipmi.Bmc.Protocol, ipmi.Bmc.InsecureTls = "ipmi", false
	if got, err := e.svc.Metal.EnrollNode(e.editorA, ipmi); err != nil || got.GetBmc().GetPort() != 623 {
		t.Errorf("ipmi default port: %v, %v", got.GetBmc(), err)
	}
	for _, tc := range []struct {
		reason string
		edit   func(*v1.EnrollNodeRequest)
		field  string
	}{
		{"the name is taken", func(r *v1.EnrollNodeRequest) { r.Name = "rack1-u12"; r.Bmc.Address = "10.9.9.9" }, "name"},
		{"the BMC is enrolled already", func(r *v1.EnrollNodeRequest) { r.Bmc.Address = "bmc-12.example.net" }, "bmc.address"},
		{"the BMC with its default port spelled out", func(r *v1.EnrollNodeRequest) {
			r.Bmc.Address, r.Bmc.Port = "bmc-12.example.net", 443
		}, "bmc.address"},
		{"a CA that is not PEM", func(r *v1.EnrollNodeRequest) { r.Bmc.InsecureTls, r.Bmc.CaCertPem = false, "not a cert" }, "bmc.caCertPem"},
		{"insecure TLS and a CA", func(r *v1.EnrollNodeRequest) { r.Bmc.CaCertPem = "x" }, "bmc.caCertPem"},
		{"no password", func(r *v1.EnrollNodeRequest) { r.Bmc.Password = "" }, "bmc.password"},
		{"no bmc", func(r *v1.EnrollNodeRequest) { r.Bmc = nil }, "bmc"},
		{"an unknown protocol", func(r *v1.EnrollNodeRequest) { r.Bmc.Protocol = "snmp" }, "bmc.protocol"},
		{"a loopback BMC", func(r *v1.EnrollNodeRequest) { r.Bmc.Address = "127.0.0.1" }, "bmc.address"},
		{"a loopback BMC by name", func(r *v1.EnrollNodeRequest) { r.Bmc.Address = "LOCALHOST" }, "bmc.address"},
		{"the metadata service", func(r *v1.EnrollNodeRequest) { r.Bmc.Address = "169.254.169.254" }, "bmc.address"},
		{"an unspecified address", func(r *v1.EnrollNodeRequest) { r.Bmc.Address = "0.0.0.0" }, "bmc.address"},
		{"IPv6 link-local", func(r *v1.EnrollNodeRequest) { r.Bmc.Address = "fe80::1" }, "bmc.address"},
	} {
		r := metalEnrollRequest(e.tenantA, "another", "10.4.0.1")
		tc.edit(r)
		_, err := e.svc.Metal.EnrollNode(e.editorA, r)
		pe := metalWantErr(t, tc.reason, err, errcode.InvalidInput, tc.field)
		if strings.Contains(pe.Error(), metalPassword) {
			t.Errorf("%s: error carries the password", tc.reason)
		}
	}
}

func TestMetalUpdateCredentials(t *testing.T) {
	t.Parallel()
	e := newMetalEnv(t)
	n := e.enroll(t, "rotate", "10.5.0.1")
	e.force(t, n.GetId(), metal.Deploying)
	before := e.row(t, n.GetId())
	got, err := e.svc.Metal.UpdateNodeCredentials(e.editorA, &v1.UpdateNodeCredentialsRequest{
		TenantId: e.tenantA, NodeId: n.GetId(), Username: "root", Password: "new-Pa55",
	})
	if err != nil {
		t.Fatal(err)
	}
	after := e.row(t, n.GetId())
	if got.GetState() != "deploying" || got.GetBmc().GetUsername() != "root" || after.Version != before.Version+1 {
		t.Errorf("after update: %s %s v%d (was v%d)", got.GetState(), got.GetBmc().GetUsername(), after.Version, before.Version)
	}
	if pw, err := e.ring.OpenSecret(string(after.BMCPasswordSealed), []byte(n.GetId())); err != nil || pw.Reveal() != "new-Pa55" {
		t.Errorf("new password not sealed: %v", err)
	}
	e.force(t, n.GetId(), metal.Retired)
	_, err = e.svc.Metal.UpdateNodeCredentials(e.editorA, &v1.UpdateNodeCredentialsRequest{
		TenantId: e.tenantA, NodeId: n.GetId(), Username: "root", Password: "x",
	})
	metalWantErr(t, "retired node", err, errcode.InvalidState, "retired")
}

func TestMetalNoKeyring(t *testing.T) {
	t.Parallel()
	e := newMetalEnv(t)
	svc := server.NewServices(core.NewBase(e.db, e.svc.Base.Authz, nil, e.svc.Base.Log, netguard.Policy{}), nil, events.Options{})
	_, err := svc.Metal.EnrollNode(e.editorA, metalEnrollRequest(e.tenantA, "nokey", "10.6.0.1"))
	if pe := metalWantErr(t, "no keyring", err, errcode.Internal, ""); pe.Cause == nil {
		t.Errorf("no cause kept for the log: %+v", pe)
	}
}
