package bmc

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"testing"

	"better-compute.dev/compute/metal"
	"better-compute.dev/compute/provider/bmc/redfishsim"
)

// canaryCore starts the canary password; it alone must not appear anywhere. The rest holds
// characters that JSON, URLs and HTML escape, to exercise every encoding a BMC might echo.
const (
	canaryCore = "Canary7f3aQ"
	canary     = canaryCore + `"<&>\+/=% z`
)

// syncBuffer lets parallel runs share one log buffer.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// leakForms are the ways the canary could show up.
func leakForms(user string) []string {
	js, _ := json.Marshal(canary)
	return []string{
		canaryCore, canary, strings.Trim(string(js), `"`), url.QueryEscape(canary),
		base64.StdEncoding.EncodeToString([]byte(user + ":" + canary)),
		base64.StdEncoding.EncodeToString([]byte(canary)),
	}
}

func TestNoCredentialLeaks(t *testing.T) {
	t.Parallel()
	type scenario struct {
		reason   string
		workflow metal.Workflow
		basic    bool
		setup    func(*redfishsim.Server)
		wantErr  bool
	}
	var cases []scenario
	for _, w := range metal.Workflows() {
		cases = append(cases,
			scenario{reason: "session " + string(w), workflow: w},
			scenario{reason: "basic auth " + string(w), workflow: w, basic: true})
	}
	cases = append(cases,
		scenario{"a login refusal that echoes the password", metal.WorkflowDeploy, false, func(s *redfishsim.Server) {
			s.InjectFault(redfishsim.Fault{Method: "POST", Path: "/redfish/v1/SessionService", Status: 401, Count: 1, EchoCredentials: true})
		}, true},
		scenario{"a 500 on reset that echoes basic auth", metal.WorkflowRescue, true, func(s *redfishsim.Server) {
			s.InjectFault(redfishsim.Fault{Method: "POST", Path: "/redfish/v1/Systems", Status: 500, Count: 1, EchoCredentials: true})
		}, true},
		scenario{"a 503 after login", metal.WorkflowInspect, false, func(s *redfishsim.Server) {
			s.InjectFault(redfishsim.Fault{Method: "GET", Path: "/redfish/v1/Systems", Status: 503, Count: 1})
		}, true},
		scenario{"credentials refused", metal.WorkflowRelease, false, func(s *redfishsim.Server) { s.RejectCredentials(true) }, true},
		scenario{"unknown power state", metal.WorkflowDeploy, false, func(s *redfishsim.Server) { s.SetPowerState("Bogus") }, true},
	)

	logs := &syncBuffer{}
	runner := &Runner{Outbound: testOutbound, Logger: slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	t.Cleanup(func() {
		out := logs.String()
		for _, f := range leakForms("operator") {
			if strings.Contains(out, f) {
				t.Errorf("slog output shows the password (form %q)", f)
			}
		}
		if !strings.Contains(out, "bmc workflow finished") || !strings.Contains(out, "bmc workflow failed") ||
			!strings.Contains(out, "127.0.0.1") {
			t.Errorf("the runner logged less than expected, so the leak check proves little:\n%.2000s", out)
		}
	})

	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			t.Parallel()
			sim, target := newSim(t, redfishsim.PowerOn, canary)
			target.BasicAuth = tc.basic
			if tc.setup != nil {
				tc.setup(sim)
			}
			rep, err := runner.Run(testCtx(t), target, tc.workflow)
			if (err != nil) != tc.wantErr {
				t.Fatalf("Run error = %v, want error %v", err, tc.wantErr)
			}
			if sim.PasswordPresented() == 0 {
				t.Fatal("the simulator never received the password: this case tests nothing")
			}
			js, _ := json.Marshal(rep)
			outputs := map[string]string{
				"report %+v": fmt.Sprintf("%+v", rep), "report %#v": fmt.Sprintf("%#v", rep),
				"report json": string(js), "target %+v": fmt.Sprintf("%+v %#v %s", target, target, target),
			}
			if err != nil {
				outputs["error"] = err.Error()
				outputs["error %+v"] = fmt.Sprintf("%+v %#v", err, err)
			}
			for name, out := range outputs {
				for _, f := range leakForms(target.Username) {
					if strings.Contains(out, f) {
						t.Errorf("%s shows the password (form %q): %s", name, f, out)
					}
				}
			}
			if err != nil && testing.Verbose() {
				t.Logf("error: %v\nlast answer: %s", err, rep.LastAnswer)
			}
			if strings.Contains(tc.reason, "echo") && (err == nil || !strings.Contains(err.Error(), "[redacted]")) {
				// The BMC did echo the password; the scrubber must have replaced it.
				t.Errorf("an echoed password should show as [redacted]: %v", err)
			}
		})
	}
}
