package bmc

import "strings"

// PowerState is a machine's power as this package understands it. bmclib passes drivers'
// strings through unchanged ("On" from Redfish, "Chassis Power is on" from ipmitool), so every
// answer goes through NormalizePower before anything acts on it.
type PowerState string

// The power states. Only On and Off are acted on; a workflow meeting Transitioning or Unknown
// stops before any power or boot request.
const (
	PowerOn            PowerState = "on"
	PowerOff           PowerState = "off"
	PowerTransitioning PowerState = "transitioning" // Redfish PoweringOn / PoweringOff
	PowerUnknown       PowerState = "unknown"
)

// NormalizePower maps a driver's power-state string to a PowerState.
func NormalizePower(raw string) PowerState {
	s := strings.ToLower(strings.TrimSpace(raw))
	s = strings.TrimPrefix(s, "chassis power is ") // ipmitool
	switch s {
	case "on":
		return PowerOn
	case "off":
		return PowerOff
	case "poweringon", "poweringoff", "powering on", "powering off":
		return PowerTransitioning
	}
	return PowerUnknown
}
