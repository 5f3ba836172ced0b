package sim

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/http"
)

// apiError is an error answer in DigitalOcean's shape. The id is the machine-readable kind the
// real API sends ("not_found", "unprocessable_entity", ...); godo keeps only the status and the
// message, but other clients read the id, so it is sent faithfully.
type apiError struct {
	status  int
	id      string
	message string
}

func (e *apiError) Error() string { return fmt.Sprintf("%d %s: %s", e.status, e.id, e.message) }

// errorBody is the JSON DigitalOcean sends with every error status.
type errorBody struct {
	ID        string `json:"id"`
	Message   string `json:"message"`
	RequestID string `json:"request_id"`
}

func errUnauthorized() *apiError {
	return &apiError{http.StatusUnauthorized, "unauthorized", "Unable to authenticate you"}
}

func errNotFound() *apiError {
	return &apiError{http.StatusNotFound, "not_found", "The resource you were accessing could not be found."}
}

func errInvalid(format string, args ...any) *apiError {
	return &apiError{http.StatusUnprocessableEntity, "unprocessable_entity", fmt.Sprintf(format, args...)}
}

func errBadRequest(format string, args ...any) *apiError {
	return &apiError{http.StatusBadRequest, "bad_request", fmt.Sprintf(format, args...)}
}

func errForbidden(format string, args ...any) *apiError {
	return &apiError{http.StatusForbidden, "forbidden", fmt.Sprintf(format, args...)}
}

func errConflict(format string, args ...any) *apiError {
	return &apiError{http.StatusConflict, "conflict", fmt.Sprintf(format, args...)}
}

func errTooManyRequests() *apiError {
	return &apiError{http.StatusTooManyRequests, "too_many_requests", "API Rate limit exceeded."}
}

func errServer(status int) *apiError {
	return &apiError{status, "server_error", "Server was unable to give you a response."}
}

// busyMessage is the text DigitalOcean answers an update of a load balancer that is still
// applying an earlier change with; reconcilers match it, so it is kept word for word.
const busyMessage = "Load balancer can't be updated while it processes previous actions"

// writeError sends e as DigitalOcean does.
func writeError(w http.ResponseWriter, requestID string, e *apiError) {
	writeJSON(w, e.status, errorBody{ID: e.id, Message: e.message, RequestID: requestID})
}

// writeJSON sends v with status; a nil v sends no body (204 answers).
func writeJSON(w http.ResponseWriter, status int, v any) {
	if v == nil {
		w.WriteHeader(status)
		return
	}
	body, err := json.Marshal(v)
	if err != nil {
		// Only the simulator's own types are encoded, so this is a programming error; answer
		// the way the real API answers its own failures.
		status = http.StatusInternalServerError
		body, _ = json.Marshal(errorBody{ID: "server_error", Message: "encoding failed"})
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n'))
}

// newUUID returns a random version-4 UUID, the shape of DigitalOcean's resource ids.
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
