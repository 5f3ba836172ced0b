package authz

import (
	"errors"
	"testing"
)

func TestEngineIDIsReversibleAndCollisionFree(t *testing.T) {
	ids := []string{"acme", "acme:prod", "a:b", "a%3Ab", "a%253Ab", "a#b", "%", ":", "a.b_c:d-e", "lb-01J0ABC", "x%23"}
	seen := map[string]string{}
	for _, id := range ids {
		enc := EngineID(id)
		for _, bad := range []byte{':', '#'} {
			for i := range len(enc) {
				if enc[i] == bad {
					t.Errorf("EngineID(%q) = %q still holds %q", id, enc, bad)
				}
			}
		}
		if other, ok := seen[enc]; ok {
			t.Errorf("EngineID(%q) = EngineID(%q) = %q", id, other, enc)
		}
		seen[enc] = id
		back, err := DecodeEngineID(enc)
		if err != nil || back != id {
			t.Errorf("DecodeEngineID(%q) = %q, %v; want %q", enc, back, err, id)
		}
	}
	// Ids without the three bytes are sent as they are, so tuples written before the encoding
	// keep their meaning.
	if got := EngineID("tenant-1.a_b"); got != "tenant-1.a_b" {
		t.Errorf("plain id changed: %q", got)
	}
	for _, bad := range []string{"a%", "a%3", "a%zz"} {
		if _, err := DecodeEngineID(bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("DecodeEngineID(%q): %v, want ErrInvalid", bad, err)
		}
	}
}
