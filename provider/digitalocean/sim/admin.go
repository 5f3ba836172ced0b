package sim

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"
)

// faultsWire is Faults as JSON for POST /_sim/faults; durations are in milliseconds so a shell
// script can send them.
type faultsWire struct {
	Rate         float64     `json:"rate"`
	Kinds        []FaultKind `json:"kinds"`
	SlowDelayMS  int64       `json:"slow_delay_ms"`
	RetryAfterMS int64       `json:"retry_after_ms"`
	Seed         uint64      `json:"seed"`
	Methods      []string    `json:"methods"`
	Paths        []string    `json:"paths"`
	Max          int         `json:"max"`
	Injected     int         `json:"injected,omitempty"` // only in GET answers
}

// tokenBody names an account in admin requests; the token travels in the body, never in a URL
// that could end up in an access log.
type tokenBody struct {
	Token string `json:"token"`
}

// routeAdmin registers the /_sim/ endpoints a separate process uses to drive the simulator.
// They need no token and are not rate limited or faulted.
func (s *Server) routeAdmin() {
	s.admin.HandleFunc("POST /_sim/faults", s.adminSetFaults)
	s.admin.HandleFunc("GET /_sim/faults", s.adminGetFaults)
	s.admin.HandleFunc("DELETE /_sim/faults", func(w http.ResponseWriter, _ *http.Request) {
		s.ClearFaults()
		w.WriteHeader(http.StatusNoContent)
	})
	s.admin.HandleFunc("POST /_sim/tokens", func(w http.ResponseWriter, r *http.Request) {
		var b tokenBody
		if err := readAdmin(r, &b); err != nil || b.Token == "" {
			writeError(w, "", errBadRequest("a JSON body with a token is required"))
			return
		}
		s.AddToken(b.Token)
		w.WriteHeader(http.StatusNoContent)
	})
	s.admin.HandleFunc("GET /_sim/requests", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"requests": s.Requests()})
	})
	s.admin.HandleFunc("POST /_sim/snapshot", func(w http.ResponseWriter, r *http.Request) {
		var b tokenBody
		if err := readAdmin(r, &b); err != nil {
			writeError(w, "", errBadRequest("a JSON body with a token is required"))
			return
		}
		snap, err := s.Snapshot(b.Token)
		if err != nil {
			writeError(w, "", adminError(err))
			return
		}
		writeJSON(w, http.StatusOK, snap)
	})
	s.admin.HandleFunc("POST /_sim/droplets", func(w http.ResponseWriter, r *http.Request) {
		var b struct {
			tokenBody
			DropletSeed
		}
		if err := readAdmin(r, &b); err != nil {
			writeError(w, "", errBadRequest("the request body is not valid JSON"))
			return
		}
		d, err := s.CreateDroplet(b.Token, b.DropletSeed)
		if err != nil {
			writeError(w, "", adminError(err))
			return
		}
		writeJSON(w, http.StatusCreated, dropletRoot{Droplet: wireDropletOf(d)})
	})
}

func (s *Server) adminSetFaults(w http.ResponseWriter, r *http.Request) {
	var f faultsWire
	if err := readAdmin(r, &f); err != nil {
		writeError(w, "", errBadRequest("the request body is not valid JSON"))
		return
	}
	for _, k := range f.Kinds {
		if !k.valid() {
			writeError(w, "", errInvalid("unknown fault kind %q", k))
			return
		}
	}
	if f.Rate < 0 || f.Rate > 1 {
		writeError(w, "", errInvalid("rate must be between 0 and 1"))
		return
	}
	s.SetFaults(Faults{Rate: f.Rate, Kinds: f.Kinds, SlowDelay: time.Duration(f.SlowDelayMS) * time.Millisecond,
		RetryAfter: time.Duration(f.RetryAfterMS) * time.Millisecond, Seed: f.Seed,
		Methods: f.Methods, Paths: f.Paths, Max: f.Max})
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) adminGetFaults(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	c, injected := s.faults.cfg, s.faults.injected
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, faultsWire{Rate: c.Rate, Kinds: c.Kinds, SlowDelayMS: c.SlowDelay.Milliseconds(),
		RetryAfterMS: c.RetryAfter.Milliseconds(), Seed: c.Seed, Methods: c.Methods, Paths: c.Paths,
		Max: c.Max, Injected: injected})
}

func readAdmin(r *http.Request, v any) error {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
	if err != nil {
		return err
	}
	return json.Unmarshal(body, v)
}

// adminError turns a helper's error into an answer in the API's error shape.
func adminError(err error) *apiError {
	var apiErr *apiError
	switch {
	case errors.As(err, &apiErr):
		return apiErr
	case errors.Is(err, ErrUnknownToken):
		return errNotFound()
	default:
		return errInvalid("%s", fmt.Sprint(err))
	}
}
