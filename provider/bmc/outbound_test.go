package bmc

import (
	"errors"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"better-compute.dev/compute/metal"
	"better-compute.dev/compute/netguard"
	"better-compute.dev/compute/seal"
)

// A BMC address is named by a tenant: under the production policy the runner refuses
// loopback, link-local (the metadata service) and unspecified addresses, and names resolving to
// them, before a byte is sent, and its error names the policy's reason, not what answered.
func TestOutboundPolicyRefusesBeforeSending(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var accepted atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			_, _ = c.Write([]byte("HTTP/1.1 200 OK\r\n\r\nsecret internal page"))
			_ = c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	production := &Runner{StepTimeout: 2 * time.Second}
	cases := []struct{ reason, address string }{
		{"loopback literal", "127.0.0.1"},
		{"loopback name", "localhost"},
		{"loopback name, upper case", "LOCALHOST"},
		{"metadata service", "169.254.169.254"},
		{"unspecified", "0.0.0.0"},
		{"IPv6 loopback", "::1"},
		{"IPv4-mapped loopback", "::ffff:127.0.0.1"},
	}
	for _, c := range cases {
		for _, proto := range []Protocol{Redfish, IPMI} {
			target := Target{Address: c.address, Port: port, Protocol: proto, Username: "u", Password: seal.Secret("pw"), InsecureTLS: true}
			_, err := production.Run(testCtx(t), target, metal.WorkflowRetire)
			var e *Error
			if !errors.As(err, &e) || e.Kind != ErrInvalidTarget || e.Retryable {
				t.Errorf("%s over %s: got %v, want a permanent invalid-target error", c.reason, proto, err)
				continue
			}
			if !strings.Contains(e.Error(), "refused") || strings.Contains(e.Error(), "secret internal page") {
				t.Errorf("%s over %s: message %q", c.reason, proto, e.Error())
			}
		}
	}
	if n := accepted.Load(); n != 0 {
		t.Errorf("%d connections reached the refused address", n)
	}
	// The same listener is reachable when the platform allows loopback (dev mode, tests).
	allowed := &Runner{StepTimeout: 2 * time.Second, Outbound: netguard.Policy{Allow: netguard.AllowLoopback()}}
	_, _ = allowed.Run(testCtx(t), Target{Address: "127.0.0.1", Port: port, Protocol: Redfish, Username: "u", Password: seal.Secret("pw"), InsecureTLS: true}, metal.WorkflowRetire)
	if accepted.Load() == 0 {
		t.Error("an allowed loopback address was never dialed")
	}
}
