package server

import (
	"net/http"
	"testing"
	"time"
)

func TestClientTimeout(t *testing.T) {
	for _, c := range []struct {
		name, value string
		want        time.Duration
		ok          bool
	}{
		{"Connect-Timeout-Ms", "250", 250 * time.Millisecond, true},
		{"Connect-Timeout-Ms", "x", 0, false},
		{"Connect-Timeout-Ms", "-1", 0, false},
		{"Grpc-Timeout", "3S", 3 * time.Second, true},
		{"Grpc-Timeout", "150m", 150 * time.Millisecond, true},
		{"Grpc-Timeout", "2H", 2 * time.Hour, true},
		{"Grpc-Timeout", "5x", 0, false},
		{"Grpc-Timeout", "123456789S", 0, false}, // more than eight digits
		{"Grpc-Timeout", "S", 0, false},
	} {
		h := http.Header{}
		h.Set(c.name, c.value)
		if got, ok := clientTimeout(h); got != c.want || ok != c.ok {
			t.Errorf("%s: %s = %v %v, want %v %v", c.name, c.value, got, ok, c.want, c.ok)
		}
	}
	if _, ok := clientTimeout(http.Header{}); ok {
		t.Error("no header gave a timeout")
	}
}
