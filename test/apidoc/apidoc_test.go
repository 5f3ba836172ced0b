// Package apidoc checks that docs/api.md, the hand-written half of the API reference, names what
// the code has: every RPC with its JSON route and permission, every error reason of errors.proto,
// every event type, quota resource and meter the lifecycle rules publish, book and start. The
// generated half (docs/api/reference.md) is kept by cmd/apidoc-gen's own test.
package apidoc

import (
	"os"
	"regexp"
	"strings"
	"testing"

	v1 "better-compute.dev/compute/gen/go/bettercompute/compute/v1"
	"better-compute.dev/compute/lifecycle"
	"better-compute.dev/compute/server"
)

func readAPIDoc(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../docs/api.md")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestEveryRPCIsDocumented: each procedure has a row "| `Method` | ... |" naming its JSON route
// and its permission (or the join token) as its (access) option states them.
func TestEveryRPCIsDocumented(t *testing.T) {
	doc := readAPIDoc(t)
	procs := server.Procedures()
	if len(procs) < 50 {
		t.Fatalf("only %d procedures found: the descriptors are not registered", len(procs))
	}
	for _, p := range procs {
		method := p.Name[strings.LastIndex(p.Name, "/")+1:]
		row := regexp.MustCompile("(?m)^\\| `" + method + "` \\|.*$").FindString(doc)
		if row == "" {
			t.Errorf("docs/api.md has no row for %s", p.Name)
			continue
		}
		a := p.Access
		if a == nil {
			t.Errorf("%s has no (access) option", p.Name)
			continue
		}
		if r := a.GetJsonRoute(); r != "" && !strings.Contains(row, "`"+r+"`") {
			t.Errorf("docs/api.md's row for %s does not name its JSON route %s: %s", method, r, row)
		}
		if perm := a.GetPermission(); perm != "" && !strings.Contains(row, "`"+perm+"`") {
			t.Errorf("docs/api.md's row for %s does not name its permission %s: %s", method, perm, row)
		}
		if a.GetJoinToken() && !strings.Contains(row, "join token") {
			t.Errorf("docs/api.md's row for %s does not say it is authenticated by the join token: %s", method, row)
		}
	}
}

// TestEveryErrorReasonIsDocumented: each value of ErrorReason, by the name the platform sends.
func TestEveryErrorReasonIsDocumented(t *testing.T) {
	doc := readAPIDoc(t)
	values := v1.ErrorReason(0).Descriptor().Values()
	if values.Len() < 2 {
		t.Fatal("ErrorReason has no values")
	}
	for i := range values.Len() {
		full := string(values.Get(i).Name())
		sent := strings.TrimPrefix(full, "ERROR_REASON_")
		if sent == "UNSPECIFIED" {
			sent = full
		}
		if !strings.Contains(doc, sent) {
			t.Errorf("docs/api.md does not name the error reason %s", sent)
		}
	}
}

// TestEveryEventQuotaAndMeterIsDocumented: each event type, quota resource and meter a kind's
// rules use is named in backquotes.
func TestEveryEventQuotaAndMeterIsDocumented(t *testing.T) {
	doc := readAPIDoc(t)
	events := 0
	for _, k := range lifecycle.Kinds {
		for tr, r := range k.Rules {
			if r.Event != "" {
				events++
			}
			for _, n := range []struct{ what, name string }{
				{"event type", r.Event}, {"quota resource", r.Books}, {"quota resource", r.Refunds},
				{"meter", r.Starts}, {"meter", r.Stops},
			} {
				what, name := n.what, n.name
				if name == "" {
					continue
				}
				if !strings.Contains(doc, "`"+name+"`") {
					t.Errorf("docs/api.md does not name the %s %s (%s %s)", what, name, k.Name, tr)
				}
			}
			for _, key := range r.Data {
				if r.Event != "" && !eventRowNames(doc, r.Event, key) {
					t.Errorf("docs/api.md's row for %s does not name its data key %s", r.Event, key)
				}
			}
		}
	}
	if events == 0 {
		t.Fatal("no kind publishes an event: lifecycle.Kinds is empty")
	}
}

// eventRowNames is true when the events table's row of typ names key.
func eventRowNames(doc, typ, key string) bool {
	row := regexp.MustCompile("(?m)^\\| `" + regexp.QuoteMeta(typ) + "` \\|.*$").FindString(doc)
	return strings.Contains(row, "`"+key+"`")
}
