package sim

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"time"
)

// call is one API request being served, with the server lock held.
type call struct {
	s    *Server
	r    *http.Request
	acct *account
	now  time.Time
	body []byte
}

// reply is what an API handler answers: a status and body, or an error.
type reply struct {
	status int
	body   any
	err    *apiError
}

func ok(status int, body any) reply { return reply{status: status, body: body} }
func fail(err *apiError) reply      { return reply{err: err} }

// maxBody bounds request bodies; DigitalOcean's are small JSON documents.
const maxBody = 1 << 20

// route registers an API handler. The body is read before the lock is taken (a slow client
// must not stall the simulator), and the answer is encoded while it is still held, so no
// answer shares memory with state another request is changing.
func (s *Server) route(pattern string, fn func(c *call) reply) {
	s.api.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		info, _ := r.Context().Value(reqInfoKey{}).(*reqInfo)
		if info == nil {
			// Only reachable when a caller bypasses ServeHTTP and uses the mux directly.
			writeError(w, "", errUnauthorized())
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
		if err != nil {
			writeError(w, info.requestID, errBadRequest("unable to read the request body"))
			return
		}
		s.mu.Lock()
		if len(body) > 0 {
			s.recordBodyLocked(pattern, body)
		}
		rep := fn(&call{s: s, r: r, acct: info.acct, now: s.opts.Now(), body: body})
		var encoded []byte
		if rep.err == nil && rep.body != nil {
			encoded, err = json.Marshal(rep.body)
		}
		s.mu.Unlock()
		switch {
		case rep.err != nil:
			writeError(w, info.requestID, rep.err)
		case err != nil:
			writeError(w, info.requestID, errServer(http.StatusInternalServerError))
		case encoded == nil:
			w.WriteHeader(rep.status)
		default:
			w.Header().Set("Content-Type", "application/json; charset=utf-8")
			w.WriteHeader(rep.status)
			_, _ = w.Write(append(encoded, '\n'))
		}
	})
}

// decode reads the JSON request body into v; an empty body leaves v as it is.
func (c *call) decode(v any) *apiError {
	if len(c.body) == 0 {
		return nil
	}
	if err := json.Unmarshal(c.body, v); err != nil {
		return errBadRequest("the request body is not valid JSON: %v", err)
	}
	return nil
}

// intPathValue reads a numeric path segment; anything else cannot name a resource.
func (c *call) intPathValue(name string) (int, bool) {
	n, err := strconv.Atoi(c.r.PathValue(name))
	return n, err == nil && n > 0
}

// stamp formats a time as DigitalOcean does in created_at.
func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }
