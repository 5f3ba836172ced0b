package bmc

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	gfcommon "github.com/stmcginnis/gofish/common"

	"better-compute.dev/compute/metal"
	"better-compute.dev/compute/provider"
	"better-compute.dev/compute/provider/bmc/redfishsim"
)

// closedPort returns a loopback port nothing listens on.
func closedPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	return port
}

func TestFailuresAgainstSimulator(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		reason    string
		workflow  metal.Workflow
		power     string
		setup     func(*redfishsim.Server, *Target)
		kind      error
		retryable bool
		failed    Step
		actions   []string // what still reached the machine
	}{
		{"refused credentials are permanent and nothing is sent", metal.WorkflowDeploy, redfishsim.PowerOn,
			func(s *redfishsim.Server, _ *Target) { s.RejectCredentials(true) },
			ErrAuth, false, StepOpen, nil},
		{"a wrong password is permanent", metal.WorkflowRelease, redfishsim.PowerOn,
			func(_ *redfishsim.Server, tg *Target) { tg.Password = "wrong" },
			ErrAuth, false, StepOpen, nil},
		{"a 500 from the reset action is retryable and stops the workflow there", metal.WorkflowDeploy, redfishsim.PowerOff,
			func(s *redfishsim.Server, _ *Target) {
				s.InjectFault(redfishsim.Fault{Method: "POST", Path: "/redfish/v1/Systems/1/Actions", Status: 500, Count: 1})
			},
			ErrBMCFailure, true, StepReboot, []string{"boot Pxe Once UEFI"}},
		{"a 503 while logging in is retryable (BMC busy)", metal.WorkflowInspect, redfishsim.PowerOff,
			func(s *redfishsim.Server, _ *Target) { s.FailNext(1, 503) },
			ErrBusy, true, StepOpen, nil},
		{"a 503 inside a collection read (the systems, read at login) is still found and retryable", metal.WorkflowRetire, redfishsim.PowerOn,
			func(s *redfishsim.Server, _ *Target) {
				s.InjectFault(redfishsim.Fault{Method: "GET", Path: "/redfish/v1/Systems", Status: 503, Count: 1})
			},
			ErrBusy, true, StepOpen, nil},
		{"a 502 on the boot PATCH is retryable", metal.WorkflowRescue, redfishsim.PowerOn,
			func(s *redfishsim.Server, _ *Target) {
				s.InjectFault(redfishsim.Fault{Method: "PATCH", Status: 502, Count: 2}) // bmclib tries twice
			},
			ErrBMCFailure, true, StepBootPXE, nil},
		{"connection refused is retryable", metal.WorkflowRetire, redfishsim.PowerOn,
			func(_ *redfishsim.Server, tg *Target) { tg.Port = closedPort(t) },
			ErrUnreachable, true, StepOpen, nil},
		{"an untrusted certificate is permanent", metal.WorkflowRetire, redfishsim.PowerOn,
			func(_ *redfishsim.Server, tg *Target) { tg.CACertPEM = nil }, // system roots do not know it
			ErrTLS, false, StepOpen, nil},
		{"InsecureTLS accepts the self-signed certificate", metal.WorkflowRetire, redfishsim.PowerOn,
			func(_ *redfishsim.Server, tg *Target) { tg.CACertPEM, tg.InsecureTLS = nil, true },
			nil, false, "", []string{"reset ForceOff"}},
		{"an unknown power state blocks power on and cycle before any request", metal.WorkflowDeploy, "Unknown",
			nil, ErrPowerUnknown, false, StepPowerState, nil},
		{"an empty power state is unknown too", metal.WorkflowInspect, "",
			func(s *redfishsim.Server, _ *Target) { s.SetPowerState("") },
			ErrPowerUnknown, false, StepPowerState, nil},
		{"a power transition in progress is retryable and sends nothing", metal.WorkflowRescue, "PoweringOn",
			nil, ErrBusy, true, StepPowerState, nil},
		{"an unknown power state may still be powered off (release)", metal.WorkflowRelease, "Paused",
			nil, nil, false, "", []string{"reset ForceOff", "boot Hdd Continuous UEFI"}},
		{"an unknown driver within the protocol is unsupported", metal.WorkflowRetire, redfishsim.PowerOn,
			func(_ *redfishsim.Server, tg *Target) { tg.Driver = "nonesuch" },
			ErrUnsupported, false, StepOpen, nil},
		{"bmclib's Dell driver cannot reach a port other than 443", metal.WorkflowRetire, redfishsim.PowerOn,
			func(_ *redfishsim.Server, tg *Target) { tg.Driver = DriverDell },
			ErrInvalidTarget, false, StepOpen, nil},
		{"an invalid target is permanent", metal.WorkflowRetire, redfishsim.PowerOn,
			func(_ *redfishsim.Server, tg *Target) { tg.Address = "https://" + tg.Address },
			ErrInvalidTarget, false, StepOpen, nil},
	} {
		t.Run(tc.reason, func(t *testing.T) {
			t.Parallel()
			sim, target := newSim(t, tc.power, testPassword)
			if tc.setup != nil {
				tc.setup(sim, &target)
			}
			rep, err := (&Runner{Outbound: testOutbound}).Run(testCtx(t), target, tc.workflow)
			if diff := cmp.Diff(tc.actions, sim.Actions()); diff != "" {
				t.Errorf("BMC actions (-want +got):\n%s", diff)
			}
			if tc.kind == nil {
				if err != nil {
					t.Fatalf("Run: %v", err)
				}
				return
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("Run error = %v (%T), want *Error", err, err)
			}
			if !errors.Is(err, tc.kind) || e.Retryable != tc.retryable || Retryable(err) != tc.retryable {
				t.Errorf("error %q: kind %v retryable %v, want %v %v", err, e.Kind, e.Retryable, tc.kind, tc.retryable)
			}
			if provider.Retryable(err) != tc.retryable {
				t.Errorf("provider.Retryable = %v, want %v", provider.Retryable(err), tc.retryable)
			}
			if !tc.retryable && !errors.Is(err, provider.ErrInvalid) {
				t.Errorf("a permanent error should wrap provider.ErrInvalid: %v", err)
			}
			if e.Step != tc.failed || rep.FailedStep != tc.failed {
				t.Errorf("failed step = %s (report %s), want %s", e.Step, rep.FailedStep, tc.failed)
			}
			if tc.failed != StepOpen && sim.SessionCount() != 0 {
				t.Errorf("a failed run left %d sessions open", sim.SessionCount())
			}
		})
	}
}

func TestRetryAfterTransientFailure(t *testing.T) {
	t.Parallel()
	sim, target := newSim(t, redfishsim.PowerOff, testPassword)
	sim.InjectFault(redfishsim.Fault{Method: "POST", Path: "/redfish/v1/Systems/1/Actions", Status: 500, Count: 1})
	r := &Runner{Outbound: testOutbound}
	_, err := r.Run(testCtx(t), target, metal.WorkflowDeploy)
	if !Retryable(err) {
		t.Fatalf("first run: %v, want retryable", err)
	}
	// The reconciler re-drives the same workflow; it is idempotent and now completes.
	if _, err := r.Run(testCtx(t), target, metal.WorkflowDeploy); err != nil {
		t.Fatalf("second run: %v", err)
	}
	want := []string{"boot Pxe Once UEFI", "boot Pxe Once UEFI", "reset On", "boot Hdd Continuous UEFI"}
	if diff := cmp.Diff(want, sim.Actions()); diff != "" {
		t.Errorf("actions over both runs (-want +got):\n%s", diff)
	}
}

func TestIPMIWithoutIpmitool(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("ipmitool"); err == nil {
		t.Skip("ipmitool is installed; this checks the message when it is not")
	}
	_, err := (&Runner{Outbound: testOutbound}).Run(testCtx(t), Target{
		Address: "127.0.0.1", Port: closedPort(t), Protocol: IPMI, Username: "u", Password: "p",
	}, metal.WorkflowRetire)
	if !errors.Is(err, ErrUnsupported) || Retryable(err) {
		t.Fatalf("ipmi without ipmitool: %v, want permanent ErrUnsupported", err)
	}
}

func TestCancelledContextIsRetryable(t *testing.T) {
	t.Parallel()
	_, target := newSim(t, redfishsim.PowerOn, testPassword)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := (&Runner{Outbound: testOutbound}).Run(ctx, target, metal.WorkflowRetire)
	if !errors.Is(err, ErrTimeout) || !Retryable(err) {
		t.Fatalf("cancelled run: %v, want retryable ErrTimeout", err)
	}
}

func TestClassify(t *testing.T) {
	t.Parallel()
	gf := func(code int) error { return gfcommon.ConstructError(code, []byte(`{"error":{"message":"x"}}`)) }
	// bmclib wraps driver errors in pkg/errors messages and multierror lists; %w stands in.
	wrap := func(err error) error { return fmt.Errorf("2 errors occurred: provider: gofish: %w", err) }
	for _, tc := range []struct {
		reason string
		err    error
		want   error
	}{
		{"gofish 401", wrap(gf(401)), ErrAuth},
		{"gofish 403", gf(403), ErrAuth},
		{"gofish 500", wrap(gf(500)), ErrBMCFailure},
		{"gofish 503 is busy", gf(503), ErrBusy},
		{"gofish 409 is busy", gf(409), ErrBusy},
		{"gofish 404 is unsupported", gf(404), ErrUnsupported},
		{"gofish 501 is unsupported", gf(501), ErrUnsupported},
		{"deadline", wrap(context.DeadlineExceeded), ErrTimeout},
		{"connection refused", wrap(&net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}), ErrUnreachable},
		{"connection reset", wrap(syscall.ECONNRESET), ErrUnreachable},
		{"dns", &net.DNSError{Err: "no such host", Name: "bmc1"}, ErrUnreachable},
		{"unknown authority", wrap(x509.UnknownAuthorityError{}), ErrTLS},
		{"text only 401", errors.New("provider: gofish: 401: unauthorized"), ErrAuth},
		{"text only 500", errors.New("failed: 500: internal"), ErrBMCFailure},
		{"ipmitool bad password", errors.New("Error: Unable to establish IPMI v2 / RMCP+ session"), ErrAuth},
		{"ipmitool RAKP", errors.New("RAKP 2 HMAC is invalid"), ErrAuth},
		{"ipmitool no answer", errors.New("Error: no response from RAKP 1 message"), ErrTimeout},
		{"text i/o timeout", errors.New("read tcp: i/o timeout"), ErrTimeout},
		{"no driver", errors.New("no PowerSetter implementations found"), ErrUnsupported},
		{"power cycle of an off machine", errors.New("power cycle failed: Command not supported in present state: Off"), ErrUnsupported},
		{"something else", errors.New("the BMC sang a song"), ErrUnclassified},
	} {
		if got := classify(tc.err); got != tc.want {
			t.Errorf("%s: classify = %v, want %v", tc.reason, got, tc.want)
		}
	}
}

func TestNormalizePower(t *testing.T) {
	t.Parallel()
	for raw, want := range map[string]PowerState{
		"On": PowerOn, "Off": PowerOff, "on": PowerOn, " OFF ": PowerOff,
		"Chassis Power is on": PowerOn, "Chassis Power is off\n": PowerOff,
		"PoweringOn": PowerTransitioning, "PoweringOff": PowerTransitioning,
		"Paused": PowerUnknown, "": PowerUnknown, "Unknown": PowerUnknown, "Chassis Power is": PowerUnknown,
	} {
		if got := NormalizePower(raw); got != want {
			t.Errorf("NormalizePower(%q) = %s, want %s", raw, got, want)
		}
	}
}

func TestTargetValidate(t *testing.T) {
	t.Parallel()
	ok := Target{Address: "10.0.0.9", Protocol: Redfish, Username: "u", Password: "p"}
	for _, tc := range []struct {
		reason string
		edit   func(*Target)
		valid  bool
	}{
		{"complete", func(*Target) {}, true},
		{"ipv6 literal", func(t *Target) { t.Address = "fd00::9" }, true},
		{"no address", func(t *Target) { t.Address = "" }, false},
		{"scheme in address", func(t *Target) { t.Address = "https://bmc" }, false},
		{"path in address", func(t *Target) { t.Address = "bmc/redfish" }, false},
		{"unknown protocol", func(t *Target) { t.Protocol = "amt" }, false},
		{"port out of range", func(t *Target) { t.Port = 70000 }, false},
		{"no user", func(t *Target) { t.Username = "" }, false},
		{"no password", func(t *Target) { t.Password = "" }, false},
		{"CA that is not PEM", func(t *Target) { t.CACertPEM = []byte("nope") }, false},
	} {
		tg := ok
		tc.edit(&tg)
		if err := tg.Validate(); (err == nil) != tc.valid || (err != nil && !errors.Is(err, ErrInvalidTarget)) {
			t.Errorf("%s: Validate = %v, want valid=%v", tc.reason, err, tc.valid)
		}
	}
	v6 := Target{Address: "fd00::9", Protocol: Redfish}
	if v6.host() != "[fd00::9]" || v6.port() != "443" || v6.String() != "redfish://[fd00::9]:443" {
		t.Errorf("ipv6 host %q port %q string %q", v6.host(), v6.port(), v6.String())
	}
	if ipmi := (Target{Address: "fd00::9", Protocol: IPMI}); ipmi.host() != "fd00::9" || ipmi.port() != "623" {
		t.Errorf("ipmi host %q port %q", ipmi.host(), ipmi.port())
	}
}

// Not parallel: it sets the environment for the duration of the test.
func TestRefusesWithDebugBmclib(t *testing.T) {
	t.Setenv("DEBUG_BMCLIB", "true")
	sim, target := newSim(t, redfishsim.PowerOn, testPassword)
	_, err := (&Runner{Outbound: testOutbound}).Run(testCtx(t), target, metal.WorkflowRetire)
	if !errors.Is(err, ErrUnsupported) || Retryable(err) {
		t.Fatalf("with DEBUG_BMCLIB set: %v, want permanent ErrUnsupported", err)
	}
	if sim.PasswordPresented() != 0 || len(sim.Requests()) != 0 {
		t.Fatalf("the BMC was contacted: %d requests", len(sim.Requests()))
	}
}

// TestCancelSendsNothingMore: a run cancelled while a slow BMC holds its boot override sends
// nothing after the cancellation, not even from bmclib's goroutines once Run has returned.
func TestCancelSendsNothingMore(t *testing.T) {
	t.Parallel()
	sim, target := newSimWith(t, redfishsim.Config{Username: "operator", Password: testPassword, Delay: 20 * time.Millisecond})
	reached, release := sim.Hold("PATCH", sim.SystemPath())
	ctx, cancel := context.WithCancel(testCtx(t))
	done := make(chan error, 1)
	go func() {
		_, err := (&Runner{Outbound: testOutbound}).Run(ctx, target, metal.WorkflowDeploy)
		done <- err
	}()
	<-reached
	cancel()
	cancelledAt := time.Now()
	release()
	if err := <-done; !errors.Is(err, ErrTimeout) && !errors.Is(err, ErrStopped) {
		t.Fatalf("cancelled run: %v", err)
	}
	// Give anything still in flight in a driver goroutine the time of several slow requests.
	time.Sleep(10 * 20 * time.Millisecond)
	for _, r := range sim.Requests() {
		if r.At.After(cancelledAt) {
			t.Errorf("%s %s arrived after the cancellation", r.Method, r.Path)
		}
	}
	if got := sim.Actions(); len(got) > 1 {
		t.Errorf("actions after the cancellation: %v", got)
	}
}
