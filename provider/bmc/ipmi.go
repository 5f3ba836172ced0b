package bmc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// DefaultIPMICipherSuite is the one RMCP+ cipher suite an IPMI run logs in with unless
// Runner.IPMICipherSuite says another: 3 (HMAC-SHA1, AES-CBC-128), which every IPMI 2.0 BMC
// offers. One suite only: bmclib's ipmitool driver retries a refused login with a second
// suite, and two refused logins per call lock accounts out on many BMCs.
const DefaultIPMICipherSuite = "3"

// ipmiConn runs ipmitool (lanplus) directly rather than through bmclib v2.3.4's ipmitool
// driver, which retries a refused login with another cipher suite, discards ipmitool's
// diagnostics (so an unreachable BMC and a refused password read alike), and has no inventory.
// Each command is one request: it passes the run's gate, is bounded by the request timeout,
// and gets the password through the environment (IPMITOOL_PASSWORD with -E), never argv.
type ipmiConn struct {
	tool    string
	t       Target
	suite   string
	timeout time.Duration
	g       *gate
	scrub   scrubber
	report  *Report
}

func openIPMI(ctx context.Context, t Target, tool, suite string, timeout time.Duration, g *gate, scrub scrubber, report *Report) (*ipmiConn, error) {
	if tool == "" {
		tool = "ipmitool"
	}
	tool, err := exec.LookPath(tool)
	if err != nil {
		return nil, fmt.Errorf("ipmitool is not installed: %w", errNoDriver)
	}
	if suite == "" {
		suite = DefaultIPMICipherSuite
	}
	c := &ipmiConn{tool: tool, t: t, suite: suite, timeout: timeout, g: g, scrub: scrub, report: report}
	report.Provider = DriverIpmitool
	// IPMI has no session to keep between commands: opening is one authenticated read.
	if _, err := c.run(ctx, StepOpen, "Open", "chassis", "power", "status"); err != nil {
		return nil, err
	}
	report.Auth = AuthRMCP
	return c, nil
}

func (c *ipmiConn) close(context.Context) {}

// run sends one ipmitool command and returns its standard output. Its error is an *Error,
// classified from ipmitool's diagnostics and scrubbed.
func (c *ipmiConn) run(ctx context.Context, step Step, call string, args ...string) (string, error) {
	if err := c.g.allow(ctx); err != nil {
		return "", &Error{Step: step, Kind: ErrStopped, Retryable: true, msg: c.scrub.clean(err.Error())}
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	// -N is ipmitool's wait per try and -R its retries: both fit in the request timeout.
	wait := max(1, int(c.timeout/time.Second)/4)
	full := append([]string{"-v", "-I", "lanplus", "-H", c.t.Address, "-p", c.t.port(), "-U", c.t.Username, "-E",
		"-C", c.suite, "-N", strconv.Itoa(wait), "-R", "1"}, args...)
	// The context is the run's: when the run is stopped (an abort seen by the gate's watch) the
	// running ipmitool is killed, mid-handshake if need be, and sends nothing more.
	cmd := exec.CommandContext(ctx, c.tool, full...)
	cmd.WaitDelay = time.Second
	cmd.Env = []string{"IPMITOOL_PASSWORD=" + c.t.Password.Reveal()}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	out := stdout.String()
	if err == nil {
		c.report.LastAnswer = c.scrub.clean(call + ": " + firstLine(out))
		return out, nil
	}
	diag := diagnostics(stderr.String())
	if diag == "" {
		// Some failures (a FRU device that is not present) are told on standard output.
		diag = short(diagnostics(out))
	}
	if diag == "" {
		diag = "no diagnostics"
	}
	msg := "ipmitool " + strings.Join(args, " ") + ": " + diag
	kind := classifyIPMI(strings.ToLower(diag + "\n" + out))
	switch {
	case c.g.run.Err() != nil:
		// Stopped by the run (an abort, the lease lost): not the BMC's failure.
		kind, msg = ErrStopped, "ipmitool "+strings.Join(args, " ")+" stopped: "+context.Cause(c.g.run).Error()
	case ctx.Err() != nil:
		kind, msg = ErrTimeout, "ipmitool "+strings.Join(args, " ")+": no answer within "+c.timeout.String()
	}
	if kind == ErrUnclassified {
		// ipmitool reached the BMC and the command failed: say how, with its exit code.
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			msg += fmt.Sprintf(" (exit status %d)", ee.ExitCode())
		}
	}
	c.report.LastAnswer = c.scrub.clean(call + ": " + msg)
	return out, &Error{Step: step, Kind: kind, Retryable: retryableKinds[kind], msg: c.scrub.clean(msg)}
}

// diagnostics keeps ipmitool's error lines, without its verbose chatter.
func diagnostics(stderr string) string {
	var keep []string
	for _, l := range strings.Split(stderr, "\n") {
		l = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(l), ">"))
		if l == "" || strings.HasPrefix(l, "Loading IANA") || strings.HasPrefix(l, "Running Get") ||
			strings.HasPrefix(l, "Discovered") || strings.HasPrefix(l, "Invalid completion code received: Invalid command") {
			continue
		}
		keep = append(keep, l)
	}
	return strings.Join(keep, "; ")
}

// classifyIPMI reads ipmitool's lanplus diagnostics (with -v). A refused login names RAKP
// ("RAKP 2 HMAC is invalid": wrong password; "unauthorized name": unknown user); a BMC that
// never answered fails its first request ("Get Auth Capabilities error"); both end with
// "Unable to establish IPMI v2 / RMCP+ session", which alone decides nothing.
func classifyIPMI(msg string) error {
	has := func(subs ...string) bool {
		for _, s := range subs {
			if strings.Contains(msg, s) {
				return true
			}
		}
		return false
	}
	switch {
	case has("rakp 2 hmac is invalid", "unauthorized name", "rakp 4 hmac", "invalid username", "invalid user name",
		"insufficient privilege", "requested maximum privilege level exceeds"):
		return ErrAuth
	case has("invalid authentication algorithm", "invalid integrity algorithm", "invalid confidentiality algorithm",
		"no matching cipher suite"):
		return ErrUnsupported
	case has("insufficient resources for session", "node busy"):
		return ErrBusy
	case has("get auth capabilities error", "error issuing get channel authentication capabilities",
		"no response from remote controller", "unable to establish ipmi v2 / rmcp+ session",
		"address lookup", "connection refused", "no route to host"):
		return ErrUnreachable
	case has("not supported in present state", "invalid command", "not supported", "invalid data field"):
		return ErrUnsupported
	case has("timeout", "timed out"):
		return ErrTimeout
	}
	return ErrUnclassified
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

func (c *ipmiConn) powerState(ctx context.Context) (PowerState, error) {
	out, err := c.run(ctx, StepPowerState, "GetPowerState", "chassis", "power", "status")
	if err != nil {
		return PowerUnknown, err
	}
	raw := firstLine(out)
	c.report.RawPower = c.scrub.clean(raw)
	return NormalizePower(raw), nil
}

func (c *ipmiConn) setPower(ctx context.Context, action string) error {
	_, err := c.run(ctx, "", "SetPowerState "+action, "chassis", "power", action)
	return err
}

func (c *ipmiConn) setBoot(ctx context.Context, device string, persistent, efi bool) error {
	var opts []string
	if persistent {
		opts = append(opts, "persistent")
	}
	if efi {
		opts = append(opts, "efiboot")
	}
	args := []string{"chassis", "bootdev", device}
	if len(opts) > 0 {
		args = append(args, "options="+strings.Join(opts, ","))
	}
	_, err := c.run(ctx, "", "SetBootDevice "+device, args...)
	return err
}

var (
	fruField   = regexp.MustCompile(`(?m)^\s*([A-Za-z][A-Za-z .]*?)\s*:\s*(.*?)\s*$`)
	sdrEntity  = regexp.MustCompile(`(?m)^\s*Entity ID\s*:\s*(\d+)\.(\d+)`)
	entityCPU  = "3"  // IPMI entity id: processor
	entityDIMM = "32" // IPMI entity id: memory device
)

// inventory is IPMI's reduced inventory: vendor, model and serial from FRU 0 (product area,
// else board, else chassis), the BMC's firmware from Get Device ID, and how many processors and
// memory devices the sensor data records name (entities 3 and 32). IPMI has no standard record
// of core counts, memory sizes, NICs or drives: those stay zero. Many BMCs ship without FRU
// data: a FRU 0 the BMC cannot read leaves vendor, model and serial unknown (empty) and the
// inventory goes on with Get Device ID and the SDRs; records naming no processor fail the step
// with ErrInventory.
func (c *ipmiConn) inventory(ctx context.Context) (*Inventory, error) {
	inv := &Inventory{}
	fru, err := c.run(ctx, StepInventory, "Inventory", "fru", "print", "0")
	var fe *Error
	switch {
	case err == nil:
		f := map[string]string{}
		for _, m := range fruField.FindAllStringSubmatch(fru, -1) {
			if _, seen := f[m[1]]; !seen && m[2] != "" {
				f[m[1]] = m[2]
			}
		}
		inv.Vendor = firstNonEmpty(f["Product Manufacturer"], f["Board Mfg"])
		inv.Model = firstNonEmpty(f["Product Name"], f["Board Product"])
		inv.Serial = firstNonEmpty(firstNonEmpty(f["Product Serial"], f["Board Serial"]), f["Chassis Serial"])
	case !errors.As(err, &fe) || fe.Retryable || fe.Kind == ErrAuth:
		return nil, err
	}
	if mc, err := c.run(ctx, StepInventory, "Inventory", "mc", "info"); err == nil {
		for _, m := range fruField.FindAllStringSubmatch(mc, -1) {
			if m[1] == "Firmware Revision" {
				inv.BMCFirmware = m[2]
			}
		}
	} else if errors.Is(err, ErrStopped) || Retryable(err) {
		return nil, err
	}
	sdr, err := c.run(ctx, StepInventory, "Inventory", "sdr", "elist", "all")
	if err != nil {
		return nil, inventoryError(err, "the sensor data records cannot be read")
	}
	seen := map[string]bool{}
	for _, m := range sdrEntity.FindAllStringSubmatch(sdr, -1) {
		key := m[1] + "." + m[2]
		if seen[key] {
			continue
		}
		seen[key] = true
		switch m[1] {
		case entityCPU:
			inv.CPUs++
		case entityDIMM:
			inv.DIMMs++
		}
	}
	if inv.CPUs == 0 {
		what := "the sensor data records name no processor (entity 3)"
		if fe != nil {
			what += "; and FRU 0 cannot be read: " + fe.msg
		}
		return nil, c.incomplete(what)
	}
	summary := fmt.Sprintf("Inventory: %s %s %s, %d CPUs, %d DIMMs", inv.Vendor, inv.Model, inv.Serial, inv.CPUs, inv.DIMMs)
	if fe != nil {
		summary = fmt.Sprintf("Inventory: %d CPUs, %d DIMMs; vendor, model and serial unknown: FRU 0 cannot be read (%s)", inv.CPUs, inv.DIMMs, fe.msg)
	}
	c.report.LastAnswer = c.scrub.clean(summary)
	return inv, nil
}

// inventoryError keeps a retryable or stopped failure as it is and makes anything else an
// inventory failure naming what could not be read.
func inventoryError(err error, what string) error {
	var e *Error
	if !errors.As(err, &e) || e.Retryable || e.Kind == ErrAuth {
		return err
	}
	return &Error{Step: StepInventory, Kind: ErrInventory, msg: what + ": " + e.msg}
}

func (c *ipmiConn) incomplete(what string) error {
	c.report.LastAnswer = c.scrub.clean("Inventory: " + what)
	return &Error{Step: StepInventory, Kind: ErrInventory, msg: what}
}
