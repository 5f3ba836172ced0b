package bmc

import (
	"testing"
	"time"

	"better-compute.dev/compute/provider/bmc/ipmisim"
	"better-compute.dev/compute/seal"
)

// ipmiSim is ipmisim's simulator with a target for it (see package ipmisim).
type ipmiSim struct {
	*ipmisim.Sim
	target Target
}

const ipmiUser, ipmiPassword = ipmisim.User, ipmisim.Password

func requireIPMISim(t *testing.T) { t.Helper(); ipmisim.Require(t) }

func freeUDPPort(t *testing.T) int { t.Helper(); return ipmisim.FreeUDPPort(t) }

func startIPMISim(t *testing.T) *ipmiSim {
	t.Helper()
	s := ipmisim.Start(t)
	return &ipmiSim{Sim: s, target: Target{Address: "127.0.0.1", Port: s.Port, Protocol: IPMI, Username: ipmiUser, Password: seal.Secret(ipmiPassword)}}
}

func (s *ipmiSim) runner() *Runner {
	return &Runner{Outbound: testOutbound, IPMITool: s.Tool, RequestTimeout: 6 * time.Second}
}

func (s *ipmiSim) lines(name string) []string     { return s.Lines(name) }
func (s *ipmiSim) file(name string) string        { return s.File(name) }
func (s *ipmiSim) commands(t *testing.T) []string { t.Helper(); return s.Commands(t) }
func (s *ipmiSim) resetLogs()                     { s.ResetLogs() }
func (s *ipmiSim) setPower(on bool)               { s.SetPower(on) }
