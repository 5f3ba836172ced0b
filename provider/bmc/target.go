// Package bmc runs the metal provision workflows against a machine's BMC through bmclib v2.
//
// One Runner.Run call is one operation: it builds one bmclib client filtered to the node's
// protocol (and to one driver within it), opens one session, runs the workflow's power and
// boot-device steps in order, and closes the session. The Report says what was done, what the
// BMC answered and which bmclib driver answered, and never holds a credential; every error is
// classified retryable or permanent and scrubbed of the password before it leaves the package.
//
// Rules this package keeps (docs/metal.md): DEBUG_BMCLIB is never set
// and a bmclib Client is never logged or serialised (its Auth.Pass is exported); the registry
// is filtered before Open, because an unfiltered Open probes every vendor's driver; a node
// whose power state cannot be read as on or off is never powered on or cycled; the BMC's TLS
// certificate is verified unless the target says InsecureTLS.
package bmc

import (
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"

	"better-compute.dev/compute/seal"
)

// Protocol is how the BMC is reached.
type Protocol string

// The protocols, spelled as bmclib's registry spells them.
const (
	Redfish Protocol = "redfish"
	IPMI    Protocol = "ipmi"
)

// Default bmclib drivers per protocol. Within "redfish" bmclib also registers its Dell and
// OpenBMC drivers; opening all three would log in three times (BMCs allow few sessions) and
// the generic driver answers first anyway, so one driver is chosen unless Target.Driver says.
const (
	DriverGofish   = "gofish"
	DriverDell     = "dell"
	DriverOpenBMC  = "openbmc"
	DriverIpmitool = "ipmitool"
)

// Target is one BMC and the credential to reach it. The password is a seal.Secret, so a Target
// printed or logged by mistake shows "[redacted]"; LogValue and String omit it anyway.
type Target struct {
	Address  string   // host name or IP address, no scheme
	Port     int      // 0: the protocol's default (443 for Redfish, 623 for IPMI)
	Protocol Protocol // Redfish or IPMI
	Username string
	Password seal.Secret
	// InsecureTLS skips verifying the BMC's certificate (most BMCs ship a self-signed one).
	// Without it the certificate must chain to CACertPEM, or to the system roots if empty.
	InsecureTLS bool
	CACertPEM   []byte
	// Driver picks one bmclib driver within the protocol (DriverDell, DriverOpenBMC...);
	// empty means DriverGofish for Redfish and DriverIpmitool for IPMI.
	Driver string
	// BasicAuth makes a Redfish run send HTTP Basic on every request without looking for a
	// SessionService. Without it a run reads the service root and uses Basic anyway when the
	// service offers no sessions or its SessionService cannot create one (Report.Auth).
	BasicAuth bool
	// LegacyBoot asks for BIOS (legacy) boot overrides instead of UEFI.
	LegacyBoot bool
	// SystemID is the Redfish ComputerSystem id of this machine behind a BMC that manages
	// several; empty means the BMC's only system (a run against a BMC with several fails).
	SystemID string
}

// ErrInvalidTarget reports a Target that cannot be used (empty address, unknown protocol...).
var ErrInvalidTarget = errors.New("bmc: invalid target")

// Validate checks the fields Run relies on.
func (t Target) Validate() error {
	switch {
	case t.Address == "":
		return fmt.Errorf("%w: address is empty", ErrInvalidTarget)
	case strings.Contains(t.Address, "://") || strings.ContainsAny(t.Address, "/ \t\n"):
		return fmt.Errorf("%w: address must be a host name or IP address, without scheme or path", ErrInvalidTarget)
	case t.Protocol != Redfish && t.Protocol != IPMI:
		return fmt.Errorf("%w: protocol %q is not %q or %q", ErrInvalidTarget, t.Protocol, Redfish, IPMI)
	case t.Port < 0 || t.Port > 65535:
		return fmt.Errorf("%w: port %d out of range", ErrInvalidTarget, t.Port)
	case t.Username == "":
		return fmt.Errorf("%w: username is empty", ErrInvalidTarget)
	case t.Password.IsZero():
		return fmt.Errorf("%w: password is not set", ErrInvalidTarget)
	}
	if len(t.CACertPEM) > 0 {
		if _, err := t.certPool(); err != nil {
			return err
		}
	}
	return nil
}

// port returns the effective port as bmclib wants it (a string).
func (t Target) port() string {
	if t.Port != 0 {
		return strconv.Itoa(t.Port)
	}
	if t.Protocol == IPMI {
		return "623"
	}
	return "443"
}

// host returns the address as bmclib's drivers want it: bmclib's Redfish driver joins host and
// port with a colon, so an IPv6 literal needs brackets there; ipmitool takes it bare.
func (t Target) host() string {
	a := strings.TrimSuffix(strings.TrimPrefix(t.Address, "["), "]")
	if ip := net.ParseIP(a); ip != nil && ip.To4() == nil && t.Protocol == Redfish {
		return "[" + a + "]"
	}
	return a
}

func (t Target) driver() string {
	if t.Driver != "" {
		return t.Driver
	}
	if t.Protocol == IPMI {
		return DriverIpmitool
	}
	return DriverGofish
}

func (t Target) certPool() (*x509.CertPool, error) {
	if len(t.CACertPEM) == 0 {
		return nil, nil // bmclib: nil pool means the system roots
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(t.CACertPEM) {
		return nil, fmt.Errorf("%w: CACertPEM holds no certificate", ErrInvalidTarget)
	}
	return pool, nil
}

// String names the BMC without its credential.
func (t Target) String() string {
	return fmt.Sprintf("%s://%s", t.Protocol, net.JoinHostPort(strings.Trim(t.Address, "[]"), t.port()))
}

// GoString is String for %#v, which would otherwise walk the struct.
func (t Target) GoString() string { return "bmc.Target(" + t.String() + ")" }

// LogValue lets a Target be logged: address, port, protocol, driver and user, never the
// password.
func (t Target) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("address", t.Address), slog.String("port", t.port()),
		slog.String("protocol", string(t.Protocol)), slog.String("driver", t.driver()),
		slog.String("user", t.Username),
	)
}
