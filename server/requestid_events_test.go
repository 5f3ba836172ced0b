package server_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"

	"better-compute.dev/compute/app"
	"better-compute.dev/compute/app/apptest"
)

// lockedBuffer is a log sink several goroutines write.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) lines() []map[string]any {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(b.buf.Bytes()))
	for sc.Scan() {
		m := map[string]any{}
		if json.Unmarshal(sc.Bytes(), &m) == nil {
			out = append(out, m)
		}
	}
	return out
}

// TestRequestIDReachesLogsAndEvents: the X-Request-Id of a call is in the server's log line of
// that call and in every event the call's transaction wrote (through each way a change writes
// its event: a create and an update that batch their last writes, a metal verb that appends in
// its own transaction), over the JSON mapping and the Connect protocol alike; an event nobody's
// call wrote has none.
func TestRequestIDReachesLogsAndEvents(t *testing.T) {
	logs := &lockedBuffer{}
	s := apptest.Start(t, func(c *app.Config) { c.Logger = slog.New(slog.NewJSONHandler(logs, nil)) })
	tn := s.NewTenant(t, "rid", "admin")
	post := func(path, rid string, body map[string]any) map[string]any {
		t.Helper()
		raw, _ := json.Marshal(body)
		req, _ := http.NewRequest(http.MethodPost, s.App.URL+path, bytes.NewReader(raw))
		req.Header.Set("Authorization", "Bearer "+tn.Token)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Request-Id", rid)
		resp, err := s.HTTP.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		out := map[string]any{}
		b, _ := io.ReadAll(resp.Body)
		_ = json.Unmarshal(b, &out)
		if resp.StatusCode != http.StatusOK || resp.Header.Get("X-Request-Id") != rid {
			t.Fatalf("%s: %d %s (X-Request-Id %q)", path, resp.StatusCode, b, resp.Header.Get("X-Request-Id"))
		}
		return out
	}
	lb := post("/api/compute/loadBalancers/create", "rid-create.1", map[string]any{
		"tenantId": tn.ID, "poolId": tn.PoolID, "name": "web", "region": "nyc3", "targets": map[string]any{"pool": true},
		"forwarding":     []any{map[string]any{"entryProtocol": "http", "entryPort": 80, "targetProtocol": "http", "targetPort": 8080}},
		"idempotencyKey": "rid-1",
	})["loadBalancer"].(map[string]any)
	post("/api/compute/loadBalancers/update", "rid-update.2", map[string]any{"tenantId": tn.ID, "loadBalancerId": lb["id"], "redirectHttpToHttps": true})
	node := post("/api/compute/metal/enroll", "rid-enroll.3", map[string]any{"tenantId": tn.ID, "name": "n1",
		"bmc": map[string]any{"address": "192.0.2.20", "protocol": "redfish", "username": "u", "password": "p"}})["node"].(map[string]any)
	post("/api/compute/metal/inspect", "rid-inspect.4", map[string]any{"tenantId": tn.ID, "nodeId": node["id"]})

	// Over Connect too: the same id, the same field.
	req, _ := http.NewRequest(http.MethodPost, s.App.URL+"/bettercompute.compute.v1.EventService/ListEvents", strings.NewReader(`{"tenantId":"`+tn.ID+`"}`))
	req.Header.Set("Authorization", "Bearer "+tn.Token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Request-Id", "rid-list.5")
	resp, err := s.HTTP.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var listed struct {
		Events []struct{ Type, ResourceID, RequestID string }
	}
	if err := json.NewDecoder(resp.Body).Decode(&listed); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	byType := map[string]string{}
	for _, e := range listed.Events {
		byType[e.Type+" "+e.ResourceID] = e.RequestID
	}
	for key, want := range map[string]string{
		"providerLoadBalancer.created " + lb["id"].(string): "rid-create.1",
		"providerLoadBalancer.updated " + lb["id"].(string): "rid-update.2",
	} {
		if got, ok := byType[key]; !ok || got != want {
			t.Errorf("event %s: requestId %q, want %q (events %+v)", key, got, want, listed.Events)
		}
	}
	metalIDs := map[string]bool{}
	for _, e := range listed.Events {
		if e.ResourceID == node["id"] {
			metalIDs[e.RequestID] = true
		}
	}
	if !metalIDs["rid-enroll.3"] || !metalIDs["rid-inspect.4"] || len(metalIDs) != 2 {
		t.Errorf("metal events' request ids %v, want rid-enroll.3 and rid-inspect.4", metalIDs)
	}

	// An event written outside any call (as a reconciler writes them) names no request.
	if _, err := s.App.DB.Q().Exec(t.Context(), `INSERT INTO event_inbox (tenant_id, id, type, resource_id) VALUES ($1, 'evt_reconciler', 'x.happened', 'r')`, tn.ID); err != nil {
		t.Fatal(err)
	}
	_, got := s.PostJSON(t, "/api/compute/events/list", tn.Token, map[string]any{"tenantId": tn.ID, "resourceId": "r"})
	evs, _ := got["events"].([]any)
	if len(evs) != 1 || evs[0].(map[string]any)["requestId"] != "" {
		t.Errorf("an event of no call: %v", got)
	}

	// Each call's log line names its request.
	for rid, procedure := range map[string]string{
		"rid-create.1": "CreateLoadBalancer", "rid-update.2": "UpdateLoadBalancer", "rid-enroll.3": "EnrollNode", "rid-list.5": "ListEvents",
	} {
		found := false
		for _, l := range logs.lines() {
			if l["requestId"] == rid && strings.HasSuffix(l["procedure"].(string), "/"+procedure) {
				found = true
			}
		}
		if !found {
			t.Errorf("no log line of %s with requestId %s", procedure, rid)
		}
	}
}
