package redfishsim

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

const (
	root         = "/redfish/v1"
	sessionsPath = root + "/SessionService/Sessions"
	removed      = "[removed]"
)

// serve records the request, applies faults, authenticates and routes. The whole request runs
// under the lock: the simulator is small and a consistent log matters more than throughput.
func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	path := strings.TrimSuffix(r.URL.Path, "/")
	if path == "" {
		path = "/"
	}

	s.mu.Lock()
	at := time.Now()
	holds := s.matchingHolds(r.Method, path)
	s.mu.Unlock()
	// A slow or busy BMC: the request has arrived (At) but is answered later.
	if s.cfg.Delay > 0 {
		time.Sleep(s.cfg.Delay)
	}
	for _, h := range holds {
		<-h.release
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	s.applyDue(time.Now())

	rec := Request{Method: r.Method, Path: path, Body: s.scrub(raw), Auth: "none", At: at}
	user, pass, basic := r.BasicAuth()
	if basic && pass == s.cfg.Password {
		s.presented++
	}
	login := r.Method == http.MethodPost && path == sessionsPath
	var creds struct{ UserName, Password string }
	if login {
		_ = json.Unmarshal(raw, &creds)
		if creds.Password == s.cfg.Password {
			s.presented++
		}
	}
	st := s.answer(w, r, path, raw, &rec, login, creds.UserName, creds.Password, basic, user, pass)
	rec.Status = st
	s.requests = append(s.requests, rec)
}

// answer handles one request and returns the status it wrote.
func (s *Server) answer(w http.ResponseWriter, r *http.Request, path string, body []byte, rec *Request,
	login bool, loginUser, loginPass string, basic bool, basicUser, basicPass string) int {
	if f := s.fault(r.Method, path); f != nil {
		if f.Hangup {
			hangUp(w)
			return 0
		}
		msg := fmt.Sprintf("injected fault %d", f.Status)
		if f.EchoCredentials {
			// A careless BMC repeating what it was sent: exactly what a client must scrub.
			if login {
				msg += fmt.Sprintf(" for login %s/%s", loginUser, loginPass)
			} else if basic {
				msg += fmt.Sprintf(" for basic auth %s:%s", basicUser, basicPass)
			}
		}
		return writeError(w, f.Status, "Base.1.8.GeneralError", msg)
	}

	switch {
	case login && s.cfg.BasicOnly:
		return writeError(w, http.StatusNotFound, "Base.1.8.ResourceMissingAtURI", "no resource at "+path)
	case login:
		if s.rejectAuth || !s.credentialsOK(loginUser, loginPass) {
			rec.Auth = "rejected"
			return writeError(w, http.StatusUnauthorized, "Base.1.8.NoValidSession", "invalid credentials")
		}
		return s.createSession(w, loginUser)
	case path == root || path == root+"/odata" || path == root+"/$metadata":
		// The service root is readable without credentials, as Redfish requires.
		if r.Method != http.MethodGet {
			return writeError(w, http.StatusMethodNotAllowed, "Base.1.8.OperationNotAllowed", "read only")
		}
		return writeJSON(w, http.StatusOK, s.serviceRoot())
	}

	switch auth := s.authenticate(r, basic, basicUser, basicPass); auth {
	case "session", "basic":
		rec.Auth = auth
	default:
		rec.Auth = auth
		return writeError(w, http.StatusUnauthorized, "Base.1.8.NoValidSession", "authentication required")
	}
	return s.route(w, r, path, body)
}

func (s *Server) credentialsOK(user, pass string) bool {
	u := subtle.ConstantTimeCompare([]byte(user), []byte(s.cfg.Username))
	p := subtle.ConstantTimeCompare([]byte(pass), []byte(s.cfg.Password))
	return u&p == 1
}

// authenticate returns "session", "basic", "none" or "rejected".
func (s *Server) authenticate(r *http.Request, basic bool, user, pass string) string {
	if tok := r.Header.Get("X-Auth-Token"); tok != "" {
		for _, t := range s.sessions {
			if subtle.ConstantTimeCompare([]byte(t), []byte(tok)) == 1 && !s.rejectAuth {
				return "session"
			}
		}
		return "rejected"
	}
	if basic {
		if !s.rejectAuth && s.credentialsOK(user, pass) {
			return "basic"
		}
		return "rejected"
	}
	return "none"
}

func (s *Server) fault(method, path string) *Fault {
	for _, f := range s.faults {
		if f.Count == 0 || (f.Method != "" && f.Method != method) || !strings.HasPrefix(path, f.Path) {
			continue
		}
		if f.Count > 0 {
			f.Count--
		}
		return f
	}
	return nil
}

func (s *Server) createSession(w http.ResponseWriter, user string) int {
	s.nextSession++
	id := fmt.Sprintf("%d", s.nextSession)
	tok := make([]byte, 16)
	_, _ = rand.Read(tok)
	s.sessions[id] = hex.EncodeToString(tok)
	w.Header().Set("X-Auth-Token", s.sessions[id])
	w.Header().Set("Location", sessionsPath+"/"+id)
	return writeJSON(w, http.StatusCreated, session(id, user))
}

// scrub removes the configured password from a recorded body, and any "Password" field of a
// JSON body whatever its value (a wrong password is still a password).
func (s *Server) scrub(raw []byte) string {
	if len(raw) == 0 {
		return ""
	}
	var doc map[string]any
	if json.Unmarshal(raw, &doc) == nil {
		for k := range doc {
			if strings.EqualFold(k, "Password") {
				doc[k] = removed
			}
		}
		if b, err := json.Marshal(doc); err == nil {
			raw = b
		}
	}
	return strings.ReplaceAll(string(raw), s.cfg.Password, removed)
}

// hangUp closes the request's connection without writing an answer.
func hangUp(w http.ResponseWriter) {
	if hj, ok := w.(http.Hijacker); ok {
		if c, _, err := hj.Hijack(); err == nil {
			_ = c.Close()
			return
		}
	}
	panic(http.ErrAbortHandler)
}

func writeJSON(w http.ResponseWriter, status int, v any) int {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("OData-Version", "4.0")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
	return status
}

// writeError answers with a Redfish error document.
func writeError(w http.ResponseWriter, status int, code, message string) int {
	return writeJSON(w, status, map[string]any{"error": map[string]any{
		"code":    code,
		"message": message,
		"@Message.ExtendedInfo": []map[string]any{{
			"@odata.type": "#Message.v1_1_1.Message", "MessageId": code, "Message": message,
		}},
	}})
}
