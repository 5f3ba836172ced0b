package redfishsim

import (
	"fmt"
	"slices"
	"time"
)

// machine is one ComputerSystem behind the simulated BMC: its power, boot override and what
// happened to it. A BMC in front of a blade chassis or a multi-node server has several.
type machine struct {
	id, path     string // "1", "/redfish/v1/Systems/1"
	name, serial string
	power        string
	boot         bootState
	boots        []string
	actions      []string
	// pending are accepted power changes the BMC has not applied yet (Config.PowerDelay): the
	// reported PowerState stays what it was until each one's time comes.
	pending []pendingChange
}

type pendingChange struct {
	at    time.Time
	apply func()
}

// newMachines builds Config.Systems machines. The first keeps the layout's system id and the
// configured serial number; the others get their own ids, names and serials, so a client that
// reads the wrong system is seen.
func newMachines(cfg Config, lay layout) []*machine {
	n := max(1, cfg.Systems)
	ms := make([]*machine, n)
	for i := range ms {
		m := &machine{
			id: lastSegment(lay.system), path: lay.system, name: "System", serial: cfg.SerialNumber,
			power: cfg.PowerState, boot: bootState{target: "None", enabled: "Disabled", mode: "UEFI"},
		}
		if n > 1 {
			m.name = fmt.Sprintf("System %d", i+1)
		}
		if i > 0 {
			m.id = fmt.Sprint(i + 1)
			if lay.kind == LayoutNamed {
				m.id = fmt.Sprintf("node-a%d", 7+i)
			}
			m.path = root + "/Systems/" + m.id
			m.serial = fmt.Sprintf("%s-%d", cfg.SerialNumber, i+1)
		}
		ms[i] = m
	}
	return ms
}

// machineAt returns the machine whose system path is path, or whose Reset action it is.
// Called with the lock held.
func (s *Server) machineAt(path string) (m *machine, reset bool) {
	for _, m := range s.machines {
		switch path {
		case m.path:
			return m, false
		case m.path + "/Actions/ComputerSystem.Reset":
			return m, true
		}
	}
	return nil, false
}

// machine returns the machine with the system id, or the first one for "". Called with the
// lock held.
func (s *Server) machine(id string) *machine {
	if id == "" {
		return s.machines[0]
	}
	for _, m := range s.machines {
		if m.id == id {
			return m
		}
	}
	return nil
}

// applyDue applies the pending power changes whose time has come. Called with the lock held,
// before anything reads a machine's state.
func (s *Server) applyDue(now time.Time) {
	for _, m := range s.machines {
		for len(m.pending) > 0 && !m.pending[0].at.After(now) {
			p := m.pending[0]
			m.pending = slices.Delete(m.pending, 0, 1)
			p.apply()
		}
	}
}

// later runs apply after Config.PowerDelay (at once without one), after every change accepted
// before it. Called with the lock held.
func (s *Server) later(m *machine, apply func()) {
	if s.cfg.PowerDelay <= 0 && len(m.pending) == 0 {
		apply()
		return
	}
	m.pending = append(m.pending, pendingChange{at: time.Now().Add(s.cfg.PowerDelay), apply: apply})
}

// SystemIDs are the ids of the systems behind the BMC, in collection order.
func (s *Server) SystemIDs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, len(s.machines))
	for i, m := range s.machines {
		out[i] = m.id
	}
	return out
}

// SystemActions are the power and boot changes one system accepted (see Actions).
func (s *Server) SystemActions(id string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if m := s.machine(id); m != nil {
		return append([]string(nil), m.actions...)
	}
	return nil
}

// SystemPowerState is one system's PowerState as the BMC reports it now.
func (s *Server) SystemPowerState(id string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.applyDue(time.Now())
	if m := s.machine(id); m != nil {
		return m.power
	}
	return ""
}

// PendingPower is how many accepted power changes the BMC has not applied yet (all systems).
func (s *Server) PendingPower() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.applyDue(time.Now())
	n := 0
	for _, m := range s.machines {
		n += len(m.pending)
	}
	return n
}
