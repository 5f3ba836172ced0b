// Package seal protects secrets at rest (provider API tokens, BMC passwords) with AES-256-GCM.
//
// A sealed value names the key that sealed it, so keys can rotate: a Keyring seals with its
// primary key and opens with any key it holds. Every value is bound to associated data chosen
// by the caller (normally the id of the row that stores it), so a sealed value copied to
// another row does not open there. Key material never appears in logs, errors or JSON.
package seal

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strings"
)

// KeySize is the length of an AES-256 key in bytes.
const KeySize = 32

// Key is one AES-256 key and its id. The id is derived from the key material (a truncated
// hash), so configuration only ever carries the base64 key and two replicas that load the same
// key agree on its id without being told.
type Key struct {
	id       string
	material []byte
}

// ErrInvalidKey reports key material that is not a base64 encoding of exactly 32 bytes.
var ErrInvalidKey = errors.New("seal: invalid key")

// idLabel separates key ids from any other hash of the same bytes.
const idLabel = "better-compute seal key id v1\x00"

// NewKey makes a Key from 32 bytes of material. The bytes are copied.
func NewKey(material []byte) (Key, error) {
	if len(material) != KeySize {
		return Key{}, fmt.Errorf("%w: want %d bytes, got %d", ErrInvalidKey, KeySize, len(material))
	}
	m := make([]byte, KeySize)
	copy(m, material)
	sum := sha256.Sum256(append([]byte(idLabel), m...))
	return Key{id: "k" + hex.EncodeToString(sum[:4]), material: m}, nil
}

// GenerateKey makes a fresh random key (for `bc-server` key generation and for tests).
func GenerateKey() (Key, error) {
	m := make([]byte, KeySize)
	if _, err := rand.Read(m); err != nil {
		return Key{}, fmt.Errorf("seal: generate key: %w", err)
	}
	return NewKey(m)
}

// ParseKey reads a key from its configuration form: standard or URL-safe base64, padded or
// not, of 32 bytes. Surrounding whitespace is ignored (keys often come from files).
func ParseKey(encoded string) (Key, error) {
	s := strings.TrimSpace(encoded)
	for _, enc := range []*base64.Encoding{
		base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding,
	} {
		if b, err := enc.DecodeString(s); err == nil {
			return NewKey(b)
		}
	}
	// The input is not echoed: it may be a real key with a typo.
	return Key{}, fmt.Errorf("%w: not base64", ErrInvalidKey)
}

// ID is the key's public identifier, written in front of every value it seals.
func (k Key) ID() string { return k.id }

// Encode returns the key's configuration form (standard base64). It reveals the key: use it
// only to write the key where configuration is kept, never to log it.
func (k Key) Encode() string { return base64.StdEncoding.EncodeToString(k.material) }

// valid reports whether k came from NewKey (the zero Key is not a key).
func (k Key) valid() bool { return len(k.material) == KeySize && k.id != "" }

// String names the key by id only, so a Key passed to fmt or a logger shows no material.
func (k Key) String() string { return "seal.Key(" + k.id + ")" }

// GoString is String for %#v, which would otherwise print the material field.
func (k Key) GoString() string { return k.String() }

// LogValue keeps the material out of slog output.
func (k Key) LogValue() slog.Value { return slog.StringValue(k.String()) }

// MarshalJSON writes only the id.
func (k Key) MarshalJSON() ([]byte, error) { return []byte(`"` + k.String() + `"`), nil }
