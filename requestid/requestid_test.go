package requestid

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestValid(t *testing.T) {
	for _, c := range []struct {
		id   string
		want bool
	}{
		{"abc-DEF_1.2", true},
		{strings.Repeat("a", MaxLen), true},
		{strings.Repeat("a", MaxLen+1), false},
		{"", false},
		{"has space", false},
		{"new\nline", false},
		{"semi;colon", false},
		{"ünï", false},
	} {
		if got := Valid(c.id); got != c.want {
			t.Errorf("Valid(%q) = %v, want %v", c.id, got, c.want)
		}
	}
	if id := NewID(); !Valid(id) || !strings.HasPrefix(id, "req_") || id == NewID() {
		t.Fatalf("NewID %q", id)
	}
}

// TestMiddleware: a sane id is kept, any other replaced; the response header and the handler's
// context carry the same id.
func TestMiddleware(t *testing.T) {
	var seen string
	h := Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = FromContext(r.Context())
		w.WriteHeader(http.StatusTeapot)
	}))
	for _, c := range []struct{ in, keep string }{
		{"client-id.42", "client-id.42"},
		{"", ""},
		{"bad id", ""},
		{strings.Repeat("x", 500), ""},
	} {
		r := httptest.NewRequest(http.MethodPost, "/", nil)
		if c.in != "" {
			r.Header.Set(Header, c.in)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		got := w.Header().Get(Header)
		if got != seen || !Valid(got) {
			t.Fatalf("in %q: header %q, context %q", c.in, got, seen)
		}
		if c.keep != "" && got != c.keep {
			t.Fatalf("in %q: got %q, want it kept", c.in, got)
		}
		if c.keep == "" && got == c.in {
			t.Fatalf("in %q: kept an invalid id", c.in)
		}
	}
	if FromContext(t.Context()) != "" {
		t.Fatal("an empty context has an id")
	}
}
