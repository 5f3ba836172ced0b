package bmc

import (
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"better-compute.dev/compute/metal"
	"better-compute.dev/compute/netguard"
	"better-compute.dev/compute/netguard/netguardtest"
	"better-compute.dev/compute/seal"
)

// foreignSecret is what a service that is not a BMC answers: it must never reach the report.
const foreignSecret = "internal-admin-page-7c1e"

// A BMC name that passed the check at resolution and then resolves to loopback (DNS
// rebinding) is refused at connect time by the Redfish dialer: nothing reaches the address.
func TestRebindingRefusedAtConnectByTheRunner(t *testing.T) {
	t.Parallel()
	var hits atomic.Int32
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		_, _ = w.Write([]byte(foreignSecret))
	}))
	defer srv.Close()
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	// First answer allowed (a documentation address), every later one loopback.
	dns := netguardtest.NewDNS(t, map[string][]netip.Addr{
		"bmc.rebind.test": {netip.MustParseAddr("192.0.2.10"), netip.MustParseAddr("127.0.0.1")},
	})
	r := &Runner{StepTimeout: 5 * time.Second, RequestTimeout: 2 * time.Second, Outbound: netguard.Policy{Resolver: dns.Resolver()}}
	target := Target{Address: "bmc.rebind.test", Port: port, Protocol: Redfish, Username: "u", Password: seal.Secret("pw"), InsecureTLS: true}
	rep, err := r.Probe(testCtx(t), target)
	if err == nil {
		t.Fatal("probe through a rebound name succeeded")
	}
	if !errors.Is(err, netguard.ErrRefused) && !strings.Contains(err.Error(), "not allowed") {
		t.Errorf("error %q does not say the address was refused", err)
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("%d requests reached the rebound loopback address", n)
	}
	if dns.Asked("bmc.rebind.test") < 2 {
		t.Errorf("the name was resolved %d times, want a check at resolution and again at connect", dns.Asked("bmc.rebind.test"))
	}
	for _, s := range []string{err.Error(), rep.LastAnswer} {
		if strings.Contains(s, foreignSecret) {
			t.Errorf("report echoes the foreign answer: %q", s)
		}
	}
}

// A service that is not a BMC, on an address the platform allows, answers every request with
// its own page: the run fails, and neither the error nor the last answer repeats the page.
func TestForeignServiceAnswerNeverEchoed(t *testing.T) {
	t.Parallel()
	for _, status := range []int{http.StatusOK, http.StatusUnauthorized, http.StatusInternalServerError} {
		srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(status)
			_, _ = w.Write([]byte("<html>" + foreignSecret + "</html>"))
		}))
		srv.TLS = &tls.Config{MinVersion: tls.VersionTLS12}
		port := srv.Listener.Addr().(*net.TCPAddr).Port
		r := &Runner{StepTimeout: 5 * time.Second, RequestTimeout: 2 * time.Second, Outbound: netguard.Policy{Allow: netguard.AllowLoopback()}}
		target := Target{Address: "127.0.0.1", Port: port, Protocol: Redfish, Username: "u", Password: seal.Secret("pw"), InsecureTLS: true}
		for _, run := range []func() (Report, error){
			func() (Report, error) { return r.Probe(testCtx(t), target) },
			func() (Report, error) { return r.Run(testCtx(t), target, metal.WorkflowInspect) },
		} {
			rep, err := run()
			if err == nil {
				t.Errorf("status %d: a foreign service passed as a BMC", status)
			}
			for _, s := range []string{errString(err), rep.LastAnswer, rep.RawPower} {
				if strings.Contains(s, foreignSecret) {
					t.Errorf("status %d: report echoes the foreign answer: %q", status, s)
				}
			}
		}
		srv.Close()
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// A Redfish error object is a BMC's answer: its code and messages are kept (cut short), so an
// operator still reads why the BMC refused.
func TestRedfishErrorObjectKept(t *testing.T) {
	t.Parallel()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"error":{"code":"Base.1.8.GeneralError","message":"A general error has occurred.",` +
			`"@Message.ExtendedInfo":[{"MessageId":"Base.1.8.NoValidSession","Message":"There is no valid session established."}]}}`))
	}))
	defer srv.Close()
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	r := &Runner{StepTimeout: 5 * time.Second, RequestTimeout: 2 * time.Second, Outbound: netguard.Policy{Allow: netguard.AllowLoopback()}}
	rep, err := r.Probe(testCtx(t), Target{Address: "127.0.0.1", Port: port, Protocol: Redfish, Username: "u", Password: seal.Secret("pw"), InsecureTLS: true})
	if !errors.Is(err, ErrAuth) {
		t.Fatalf("probe: %v, want credentials refused", err)
	}
	for _, s := range []string{err.Error(), rep.LastAnswer} {
		if !strings.Contains(s, "Base.1.8.NoValidSession There is no valid session established.") {
			t.Errorf("the Redfish error's message is lost: %q", s)
		}
	}
}
