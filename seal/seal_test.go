package seal

import (
	"bytes"
	"encoding/base64"
	"errors"
	"strings"
	"testing"
)

func mustKey(t *testing.T) Key {
	t.Helper()
	k, err := GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func mustRing(t *testing.T, primary Key, older ...Key) *Keyring {
	t.Helper()
	kr, err := NewKeyring(primary, older...)
	if err != nil {
		t.Fatal(err)
	}
	return kr
}

func TestSealOpenRoundTrip(t *testing.T) {
	t.Parallel()
	kr := mustRing(t, mustKey(t))
	for _, tc := range []struct {
		reason    string
		plaintext []byte
		ad        []byte
	}{
		{"a BMC password bound to its node row", []byte("hunter2-bmc"), []byte("mnode_01hzz")},
		{"an empty secret still seals (credentials cleared)", []byte{}, []byte("pacct_1")},
		{"no associated data", []byte("token"), nil},
		{"binary plaintext", []byte{0, 1, 2, 255}, []byte("x")},
	} {
		t.Run(tc.reason, func(t *testing.T) {
			t.Parallel()
			sealed, err := kr.Seal(tc.plaintext, tc.ad)
			if err != nil {
				t.Fatal(err)
			}
			if len(tc.plaintext) > 0 && strings.Contains(sealed, string(tc.plaintext)) {
				t.Fatalf("sealed value %q shows the plaintext", sealed)
			}
			if !strings.HasPrefix(sealed, "bcs1:"+kr.PrimaryID()+":") {
				t.Fatalf("sealed value %q lacks the version and key id prefix", sealed)
			}
			got, err := kr.Open(sealed, tc.ad)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, tc.plaintext) {
				t.Fatalf("Open = %q, want %q", got, tc.plaintext)
			}
		})
	}
}

func TestSealIsRandomised(t *testing.T) {
	t.Parallel()
	kr := mustRing(t, mustKey(t))
	a, _ := kr.Seal([]byte("same"), []byte("row"))
	b, _ := kr.Seal([]byte("same"), []byte("row"))
	if a == b {
		t.Fatal("two seals of the same secret are equal: the nonce is not fresh")
	}
}

// flip changes one character of the base64 body of a sealed value.
func flip(sealed string, at int) string {
	i := strings.LastIndex(sealed, ":") + 1 + at
	b := []byte(sealed)
	if b[i] == 'A' {
		b[i] = 'B'
	} else {
		b[i] = 'A'
	}
	return string(b)
}

func TestOpenRefuses(t *testing.T) {
	t.Parallel()
	k1, k2 := mustKey(t), mustKey(t)
	kr := mustRing(t, k1)
	sealed, err := kr.Seal([]byte("s3cret"), []byte("mnode_a"))
	if err != nil {
		t.Fatal(err)
	}
	body := sealed[strings.LastIndex(sealed, ":")+1:]
	raw, _ := base64.RawURLEncoding.DecodeString(body)
	for _, tc := range []struct {
		reason string
		ring   *Keyring
		value  string
		ad     string
		want   error
	}{
		{"a value moved to another row does not open", kr, sealed, "mnode_b", ErrOpen},
		{"missing associated data does not open", kr, sealed, "", ErrOpen},
		{"a flipped nonce byte", kr, flip(sealed, 0), "mnode_a", ErrOpen},
		{"a flipped ciphertext byte", kr, flip(sealed, 20), "mnode_a", ErrOpen},
		{"a flipped tag byte", kr, flip(sealed, len(body)-2), "mnode_a", ErrOpen},
		{"truncated below nonce+tag", kr, "bcs1:" + k1.ID() + ":" + base64.RawURLEncoding.EncodeToString(raw[:20]), "mnode_a", ErrMalformed},
		{"another key's ring", mustRing(t, k2), sealed, "mnode_a", ErrUnknownKey},
		{"the key id edited to another key held by the ring", mustRing(t, k2, k1),
			strings.Replace(sealed, k1.ID(), k2.ID(), 1), "mnode_a", ErrOpen},
		{"an unknown version", kr, strings.Replace(sealed, "bcs1", "bcs9", 1), "mnode_a", ErrMalformed},
		{"not a sealed value at all", kr, "plaintext-password", "mnode_a", ErrMalformed},
		{"bad base64", kr, "bcs1:" + k1.ID() + ":***", "mnode_a", ErrMalformed},
		{"empty", kr, "", "mnode_a", ErrMalformed},
	} {
		t.Run(tc.reason, func(t *testing.T) {
			t.Parallel()
			pt, err := tc.ring.Open(tc.value, []byte(tc.ad))
			if !errors.Is(err, tc.want) {
				t.Fatalf("Open error = %v, want %v", err, tc.want)
			}
			if pt != nil {
				t.Fatalf("Open returned plaintext %q with an error", pt)
			}
			if strings.Contains(err.Error(), "s3cret") {
				t.Fatalf("error %q shows the plaintext", err)
			}
		})
	}
}

func TestRotation(t *testing.T) {
	t.Parallel()
	oldKey, newKey := mustKey(t), mustKey(t)
	before := mustRing(t, oldKey)
	sealedOld, _ := before.Seal([]byte("tok"), []byte("pacct_1"))

	after := mustRing(t, newKey, oldKey)
	if !after.NeedsRotation(sealedOld) {
		t.Fatal("a value sealed by the old key should need rotation")
	}
	pt, err := after.Open(sealedOld, []byte("pacct_1"))
	if err != nil || string(pt) != "tok" {
		t.Fatalf("old value through rotated ring: %q, %v", pt, err)
	}
	resealed, _ := after.Seal(pt, []byte("pacct_1"))
	if after.NeedsRotation(resealed) {
		t.Fatal("a value sealed by the primary should not need rotation")
	}
	if id, _ := KeyID(resealed); id != newKey.ID() {
		t.Fatalf("resealed with %s, want %s", id, newKey.ID())
	}
	if !after.NeedsRotation("garbage") {
		t.Fatal("an unreadable value should be reported for attention")
	}
	if _, err := before.Open(resealed, []byte("pacct_1")); !errors.Is(err, ErrUnknownKey) {
		t.Fatalf("old ring opening new value: %v, want ErrUnknownKey", err)
	}
}

func TestKeys(t *testing.T) {
	t.Parallel()
	k := mustKey(t)
	parsed, err := ParseKey(" " + k.Encode() + "\n")
	if err != nil {
		t.Fatal(err)
	}
	if parsed.ID() != k.ID() {
		t.Fatalf("parsed key id %s, want %s: ids must derive from the material", parsed.ID(), k.ID())
	}
	raw, _ := base64.StdEncoding.DecodeString(k.Encode())
	if p, err := ParseKey(base64.RawURLEncoding.EncodeToString(raw)); err != nil || p.ID() != k.ID() {
		t.Fatalf("URL-safe unpadded form: %v", err)
	}
	for _, tc := range []struct{ reason, in string }{
		{"too short", base64.StdEncoding.EncodeToString(make([]byte, 16))},
		{"too long", base64.StdEncoding.EncodeToString(make([]byte, 33))},
		{"not base64", "this is not a key!"},
		{"empty", ""},
	} {
		if _, err := ParseKey(tc.in); !errors.Is(err, ErrInvalidKey) {
			t.Errorf("%s: ParseKey error = %v, want ErrInvalidKey", tc.reason, err)
		}
	}
	if _, err := NewKeyring(Key{}); !errors.Is(err, ErrInvalidKey) {
		t.Errorf("zero key accepted as primary: %v", err)
	}
	if _, err := NewKeyring(k, parsed); !errors.Is(err, ErrInvalidKey) {
		t.Errorf("the same key twice accepted: %v", err)
	}
}
