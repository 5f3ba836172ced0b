package redfishsim

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
)

var (
	bootTargets  = []string{"None", "Pxe", "Hdd", "Cd", "Usb", "BiosSetup", "Diags", "UefiShell", "UefiHttp"}
	bootEnabled  = []string{"Disabled", "Once", "Continuous"}
	bootModes    = []string{"Legacy", "UEFI"}
	resetTypes   = []string{"On", "ForceOff", "GracefulShutdown", "GracefulRestart", "ForceRestart", "ForceOn", "PushPowerButton", "PowerCycle", "Nmi"}
	notFoundCode = "Base.1.8.ResourceMissingAtURI"
)

// route serves an authenticated request.
func (s *Server) route(w http.ResponseWriter, r *http.Request, path string, body []byte) int {
	switch r.Method {
	case http.MethodGet:
		if doc := s.document(path); doc != nil {
			return writeJSON(w, http.StatusOK, doc)
		}
		return writeError(w, http.StatusNotFound, notFoundCode, "no resource at "+path)
	case http.MethodPatch:
		if m, reset := s.machineAt(path); m != nil && !reset {
			return s.patchSystem(w, m, body)
		}
	case http.MethodPost:
		if m, reset := s.machineAt(path); m != nil && reset {
			return s.reset(w, m, body)
		}
	case http.MethodDelete:
		if id, ok := strings.CutPrefix(path, sessionsPath+"/"); ok {
			if _, open := s.sessions[id]; !open {
				return writeError(w, http.StatusNotFound, notFoundCode, "no such session")
			}
			delete(s.sessions, id)
			w.WriteHeader(http.StatusNoContent)
			return http.StatusNoContent
		}
	}
	if s.document(path) != nil {
		return writeError(w, http.StatusMethodNotAllowed, "Base.1.8.OperationNotAllowed", r.Method+" not allowed on "+path)
	}
	return writeError(w, http.StatusNotFound, notFoundCode, "no resource at "+path)
}

// patchSystem applies a Boot override. Only Boot is writable; any other property is refused
// as a real BMC refuses read-only properties.
func (s *Server) patchSystem(w http.ResponseWriter, m *machine, body []byte) int {
	var patch map[string]json.RawMessage
	if err := json.Unmarshal(body, &patch); err != nil {
		return writeError(w, http.StatusBadRequest, "Base.1.8.MalformedJSON", "body is not JSON")
	}
	for k := range patch {
		if k != "Boot" {
			return writeError(w, http.StatusBadRequest, "Base.1.8.PropertyNotWritable", k+" is read only")
		}
	}
	var boot struct {
		BootSourceOverrideTarget  string
		BootSourceOverrideEnabled string
		BootSourceOverrideMode    string
	}
	if err := json.Unmarshal(patch["Boot"], &boot); err != nil {
		return writeError(w, http.StatusBadRequest, "Base.1.8.PropertyValueTypeError", "Boot is not an object")
	}
	next := m.boot
	for _, f := range []struct {
		val     string
		allowed []string
		dst     *string
	}{
		{boot.BootSourceOverrideTarget, bootTargets, &next.target},
		{boot.BootSourceOverrideEnabled, bootEnabled, &next.enabled},
		{boot.BootSourceOverrideMode, bootModes, &next.mode},
	} {
		if f.val == "" {
			continue
		}
		if !slices.Contains(f.allowed, f.val) {
			return writeError(w, http.StatusBadRequest, "Base.1.8.PropertyValueNotInList", f.val+" is not allowed")
		}
		*f.dst = f.val
	}
	m.boot = next
	action := "boot " + next.target + " " + next.enabled
	if boot.BootSourceOverrideMode != "" {
		action += " " + next.mode
	}
	s.act(m, action)
	w.WriteHeader(http.StatusNoContent)
	return http.StatusNoContent
}

// reset runs a ComputerSystem.Reset action. The BMC accepts it at once and applies it after
// Config.PowerDelay; it is checked against the state the BMC reports when it arrives.
func (s *Server) reset(w http.ResponseWriter, m *machine, body []byte) int {
	var req struct{ ResetType string }
	if err := json.Unmarshal(body, &req); err != nil || !slices.Contains(resetTypes, req.ResetType) {
		return writeError(w, http.StatusBadRequest, "Base.1.8.ActionParameterNotSupported", "unsupported ResetType")
	}
	on := m.power == PowerOn
	off := func() { m.power = PowerOff }
	up := func() { s.startUp(m) }
	switch req.ResetType {
	case "On", "ForceOn":
		if !on {
			s.later(m, up)
		}
	case "ForceOff", "GracefulShutdown":
		s.later(m, off)
	case "PushPowerButton":
		if on {
			s.later(m, off)
		} else {
			s.later(m, up)
		}
	case "GracefulRestart", "ForceRestart":
		if !on {
			return writeError(w, http.StatusConflict, "Base.1.8.ActionNotSupported", "the system is not powered on")
		}
		s.later(m, up)
	case "PowerCycle":
		s.later(m, up)
	case "Nmi":
	}
	s.act(m, "reset "+req.ResetType)
	w.WriteHeader(http.StatusNoContent)
	return http.StatusNoContent
}

// act records an accepted change, for the BMC and for the system.
func (s *Server) act(m *machine, action string) {
	s.actions = append(s.actions, action)
	m.actions = append(m.actions, action)
}

// startUp powers the machine on (or restarts it) and boots it, consuming a one-time override.
func (s *Server) startUp(m *machine) {
	m.power = PowerOn
	device := "Hdd"
	if m.boot.enabled != "Disabled" && m.boot.target != "None" {
		device = m.boot.target
	}
	if m.boot.enabled == "Once" {
		m.boot.enabled = "Disabled"
	}
	s.boots = append(s.boots, device)
	m.boots = append(m.boots, device)
}
