// Package requestid names each HTTP request the server answers: an id the caller sent in
// X-Request-Id when it is sane, a fresh one otherwise. The id travels in the request's context,
// comes back in the X-Request-Id response header of every answer and in the requestId metadata of
// every platform error, so a caller's report and the server's logs meet on one string.
package requestid

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
)

// Header is the request and response header carrying the id.
const Header = "X-Request-Id"

// MaxLen bounds an id taken from a caller; a longer one is replaced.
const MaxLen = 128

type ctxKey struct{}

// NewID returns a fresh id: "req_" and 32 hexadecimal digits of randomness.
func NewID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read does not fail (Go 1.24+)
	return "req_" + hex.EncodeToString(b[:])
}

// Valid reports whether id may be used as given: 1 to MaxLen characters of [A-Za-z0-9._-].
func Valid(id string) bool {
	if id == "" || len(id) > MaxLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// WithID returns ctx carrying id.
func WithID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, ctxKey{}, id)
}

// FromContext returns the id ctx carries ("" none).
func FromContext(ctx context.Context) string {
	id, _ := ctx.Value(ctxKey{}).(string)
	return id
}

// Middleware gives every request an id (the caller's X-Request-Id when Valid, else NewID), puts
// it in the request's context and sets it as the X-Request-Id response header before next runs,
// so every answer carries it, errors and streams included.
func Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get(Header)
		if !Valid(id) {
			id = NewID()
		}
		w.Header().Set(Header, id)
		next.ServeHTTP(w, r.WithContext(WithID(r.Context(), id)))
	})
}
