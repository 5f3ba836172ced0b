package redfishsim

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

type client struct {
	t     *testing.T
	s     *Server
	http  *http.Client
	token string
	user  string
	pass  string
}

func newClient(t *testing.T, cfg Config) *client {
	t.Helper()
	s := New(cfg)
	t.Cleanup(s.Close)
	return &client{t: t, s: s, http: &http.Client{Transport: &http.Transport{TLSClientConfig: s.TLSConfig()}}}
}

// do sends a request and returns the status and decoded body.
func (c *client) do(method, path, body string) (int, map[string]any, http.Header) {
	c.t.Helper()
	req, err := http.NewRequest(method, c.s.URL()+path, strings.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	if c.token != "" {
		req.Header.Set("X-Auth-Token", c.token)
	} else if c.user != "" {
		req.SetBasicAuth(c.user, c.pass)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var doc map[string]any
	_ = json.Unmarshal(raw, &doc)
	return resp.StatusCode, doc, resp.Header
}

func (c *client) login(user, pass string) int {
	c.t.Helper()
	st, _, h := c.do("POST", "/redfish/v1/SessionService/Sessions", `{"UserName":"`+user+`","Password":"`+pass+`"}`)
	if st == http.StatusCreated {
		c.token = h.Get("X-Auth-Token")
		if !strings.HasPrefix(h.Get("Location"), "/redfish/v1/SessionService/Sessions/") {
			c.t.Errorf("login Location %q", h.Get("Location"))
		}
	}
	return st
}

func TestSessionsAndAuth(t *testing.T) {
	t.Parallel()
	c := newClient(t, Config{Username: "root", Password: "s3cret-sim"})
	if st, doc, _ := c.do("GET", "/redfish/v1/", ""); st != 200 || doc["RedfishVersion"] == nil {
		t.Fatalf("service root without credentials: %d %v", st, doc)
	}
	if st, _, _ := c.do("GET", "/redfish/v1/Systems/1", ""); st != 401 {
		t.Fatalf("system without credentials: %d, want 401", st)
	}
	if st := c.login("root", "wrong"); st != 401 {
		t.Fatalf("bad login: %d", st)
	}
	if st := c.login("root", "s3cret-sim"); st != 201 {
		t.Fatalf("login: %d", st)
	}
	if c.s.SessionCount() != 1 {
		t.Fatalf("sessions = %d", c.s.SessionCount())
	}
	if st, doc, _ := c.do("GET", "/redfish/v1/Systems/1", ""); st != 200 || doc["PowerState"] != "Off" {
		t.Fatalf("system with token: %d %v", st, doc["PowerState"])
	}
	if st, _, _ := c.do("DELETE", "/redfish/v1/SessionService/Sessions/1", ""); st != 204 || c.s.SessionCount() != 0 {
		t.Fatalf("logout: %d, %d sessions", st, c.s.SessionCount())
	}
	if st, _, _ := c.do("GET", "/redfish/v1/Systems/1", ""); st != 401 {
		t.Fatalf("token after logout: %d, want 401", st)
	}
	c.token, c.user, c.pass = "", "root", "s3cret-sim"
	if st, _, _ := c.do("GET", "/redfish/v1/Chassis/1", ""); st != 200 {
		t.Fatalf("basic auth: %d", st)
	}
	c.s.RejectCredentials(true)
	if st, _, _ := c.do("GET", "/redfish/v1/Chassis/1", ""); st != 401 {
		t.Fatalf("basic auth with credentials rejected: %d", st)
	}
	if got := c.s.PasswordPresented(); got != 3 {
		t.Errorf("PasswordPresented = %d, want 3 (one login, two basic)", got)
	}
	for _, r := range c.s.Requests() {
		if strings.Contains(r.Body, "s3cret-sim") || strings.Contains(r.Body, "wrong") {
			t.Errorf("recorded body keeps a password: %+v", r)
		}
	}
	auths := []string{}
	for _, r := range c.s.Requests() {
		auths = append(auths, r.Auth)
	}
	want := []string{"none", "none", "rejected", "none", "session", "session", "rejected", "basic", "rejected"}
	if diff := cmp.Diff(want, auths); diff != "" {
		t.Errorf("recorded auth (-want +got):\n%s", diff)
	}
}

func TestPowerAndBoot(t *testing.T) {
	t.Parallel()
	c := newClient(t, Config{})
	c.user, c.pass = "admin", "password"
	reset := func(kind string) int {
		st, _, _ := c.do("POST", "/redfish/v1/Systems/1/Actions/ComputerSystem.Reset", `{"ResetType":"`+kind+`"}`)
		return st
	}
	boot := func(body string) int {
		st, _, _ := c.do("PATCH", "/redfish/v1/Systems/1", body)
		return st
	}
	for _, step := range []struct {
		reason string
		status int
		got    int
	}{
		{"a restart of an off machine is refused", 409, reset("ForceRestart")},
		{"an unknown reset type is refused", 400, reset("Explode")},
		{"a one-time PXE override", 204, boot(`{"Boot":{"BootSourceOverrideTarget":"Pxe","BootSourceOverrideEnabled":"Once"}}`)},
		{"power on boots PXE and consumes the override", 204, reset("On")},
		{"a restart now boots the disk", 204, reset("ForceRestart")},
		{"an unknown boot target is refused", 400, boot(`{"Boot":{"BootSourceOverrideTarget":"Floppy9"}}`)},
		{"a read-only property is refused", 400, boot(`{"PowerState":"On"}`)},
		{"a persistent disk override", 204, boot(`{"Boot":{"BootSourceOverrideTarget":"Hdd","BootSourceOverrideEnabled":"Continuous","BootSourceOverrideMode":"UEFI"}}`)},
		{"power off", 204, reset("ForceOff")},
		{"power cycle of an off machine powers it on", 204, reset("PowerCycle")},
	} {
		if step.got != step.status {
			t.Errorf("%s: status %d, want %d", step.reason, step.got, step.status)
		}
	}
	wantActions := []string{"boot Pxe Once", "reset On", "reset ForceRestart", "boot Hdd Continuous UEFI", "reset ForceOff", "reset PowerCycle"}
	if diff := cmp.Diff(wantActions, c.s.Actions()); diff != "" {
		t.Errorf("actions (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"Pxe", "Hdd", "Hdd"}, c.s.Boots()); diff != "" {
		t.Errorf("boots (-want +got):\n%s", diff)
	}
	if c.s.PowerState() != PowerOn {
		t.Errorf("power = %s", c.s.PowerState())
	}
	_, doc, _ := c.do("GET", "/redfish/v1/Systems/1", "")
	b, _ := doc["Boot"].(map[string]any)
	if b["BootSourceOverrideTarget"] != "Hdd" || b["BootSourceOverrideEnabled"] != "Continuous" {
		t.Errorf("system Boot = %v", b)
	}
}

func TestFaultsAndInventory(t *testing.T) {
	t.Parallel()
	c := newClient(t, Config{CPUs: 1, DIMMs: 2})
	c.user, c.pass = "admin", "password"
	c.s.FailNext(2, 503)
	c.s.InjectFault(Fault{Method: "GET", Path: "/redfish/v1/Managers", Status: 500, Count: -1, EchoCredentials: true})
	var got []int
	for _, p := range []string{"/redfish/v1/Systems", "/redfish/v1/Systems", "/redfish/v1/Systems", "/redfish/v1/Managers/1", "/redfish/v1/Managers"} {
		st, _, _ := c.do("GET", p, "")
		got = append(got, st)
	}
	if diff := cmp.Diff([]int{503, 503, 200, 500, 500}, got); diff != "" {
		t.Errorf("statuses (-want +got):\n%s", diff)
	}
	_, doc, _ := c.do("GET", "/redfish/v1/Managers", "")
	if !strings.Contains(doc["error"].(map[string]any)["message"].(string), "admin:password") {
		t.Errorf("EchoCredentials should echo basic auth: %v", doc)
	}
	for path, want := range map[string]int{
		"/redfish/v1/Systems/1/Processors/CPU1": 200, "/redfish/v1/Systems/1/Processors/CPU2": 404,
		"/redfish/v1/Systems/1/Memory/DIMM2": 200, "/redfish/v1/Systems/1/Memory/DIMM02": 404,
		"/redfish/v1/Chassis/1": 200, "/redfish/v1/Nope": 404,
	} {
		if st, _, _ := c.do("GET", path, ""); st != want {
			t.Errorf("GET %s = %d, want %d", path, st, want)
		}
	}
	if st, _, _ := c.do("DELETE", "/redfish/v1/Chassis/1", ""); st != 405 {
		t.Errorf("DELETE chassis = %d, want 405", st)
	}
	c.s.ResetLog()
	if len(c.s.Requests()) != 0 || len(c.s.Actions()) != 0 {
		t.Error("ResetLog kept entries")
	}
}
