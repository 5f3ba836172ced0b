package server_test

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/dynamicpb"

	"better-compute.dev/compute/app/apptest"
	_ "better-compute.dev/compute/gen/go/bettercompute/compute/v1"
)

// stringPaths lists setters for every string field reachable in md (nested messages and
// repeated fields too), each putting value at that one place of a fresh message.
func stringPaths(md protoreflect.MessageDescriptor, depth int) map[string]func(m protoreflect.Message, value string) {
	out := map[string]func(protoreflect.Message, string){}
	if depth > 4 || strings.HasPrefix(string(md.FullName()), "google.protobuf.") {
		return out
	}
	fields := md.Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		if fd.IsMap() {
			continue
		}
		name := fd.JSONName()
		switch fd.Kind() {
		case protoreflect.StringKind:
			if fd.IsList() {
				out[name+"[0]"] = func(m protoreflect.Message, v string) { m.Mutable(fd).List().Append(protoreflect.ValueOfString(v)) }
			} else {
				out[name] = func(m protoreflect.Message, v string) { m.Set(fd, protoreflect.ValueOfString(v)) }
			}
		case protoreflect.MessageKind:
			for sub, set := range stringPaths(fd.Message(), depth+1) {
				if fd.IsList() {
					out[name+"[0]."+sub] = func(m protoreflect.Message, v string) {
						l := m.Mutable(fd).List()
						el := l.NewElement()
						set(el.Message(), v)
						l.Append(el)
					}
				} else {
					out[name+"."+sub] = func(m protoreflect.Message, v string) { set(m.Mutable(fd).Message(), v) }
				}
			}
		}
	}
	return out
}

// TestNULInEveryStringFieldIsInvalidInput walks every request message of every service and sends
// U+0000 in each of its string fields, one at a time, over the Connect protocol: every answer is
// invalid_argument naming that field, never internal, and nothing is written.
func TestNULInEveryStringFieldIsInvalidInput(t *testing.T) {
	s := apptest.Start(t)
	before := s.RowCounts(t)
	client := &http.Client{}
	calls := 0
	protoregistry.GlobalFiles.RangeFilesByPackage("bettercompute.compute.v1", func(fd protoreflect.FileDescriptor) bool {
		services := fd.Services()
		for i := range services.Len() {
			svc := services.Get(i)
			methods := svc.Methods()
			for j := range methods.Len() {
				m := methods.Get(j)
				for path, set := range stringPaths(m.Input(), 0) {
					msg := dynamicpb.NewMessage(m.Input())
					set(msg, "a\x00b")
					body, err := protojson.Marshal(msg)
					if err != nil {
						t.Fatal(err)
					}
					contentType := "application/json"
					if m.IsStreamingServer() {
						var env bytes.Buffer
						env.WriteByte(0)
						_ = binary.Write(&env, binary.BigEndian, uint32(len(body)))
						env.Write(body)
						body, contentType = env.Bytes(), "application/connect+json"
					}
					req, _ := http.NewRequest(http.MethodPost, fmt.Sprintf("%s/%s/%s", s.App.URL, svc.FullName(), m.Name()), bytes.NewReader(body))
					req.Header.Set("Content-Type", contentType)
					req.Header.Set("Authorization", "Bearer "+s.AdminToken)
					resp, err := client.Do(req)
					if err != nil {
						t.Fatal(err)
					}
					raw, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					calls++
					name := fmt.Sprintf("%s/%s %s", svc.Name(), m.Name(), path)
					if m.IsStreamingServer() {
						if !bytes.Contains(raw, []byte(`"invalid_argument"`)) {
							t.Errorf("%s: stream answer %q, want invalid_argument", name, raw)
						}
						continue
					}
					var e struct {
						Code    string `json:"code"`
						Message string `json:"message"`
					}
					_ = json.Unmarshal(raw, &e)
					if resp.StatusCode != http.StatusBadRequest || e.Code != "invalid_argument" || !strings.Contains(e.Message, path) {
						t.Errorf("%s: HTTP %d %s %q, want 400 invalid_argument naming %s", name, resp.StatusCode, e.Code, e.Message, path)
					}
				}
			}
		}
		return true
	})
	if calls < 100 {
		t.Fatalf("only %d calls made: the walk missed the services", calls)
	}
	t.Logf("%d calls, one per string field of every request", calls)
	after := s.RowCounts(t)
	for table, n := range after {
		if n != before[table] {
			t.Errorf("table %s had %d rows before the calls and %d after", table, before[table], n)
		}
	}
}
