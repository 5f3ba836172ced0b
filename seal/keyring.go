package seal

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
)

// Errors from Open, wrapped with %w. None of them carries plaintext or key material.
var (
	// ErrMalformed: the value is not a sealed value of this package.
	ErrMalformed = errors.New("seal: malformed sealed value")
	// ErrUnknownKey: the value names a key this keyring does not hold (retired too early?).
	ErrUnknownKey = errors.New("seal: unknown key")
	// ErrOpen: authentication failed: the value was altered, or it is bound to other
	// associated data (copied from another row), or another key with the same id sealed it.
	ErrOpen = errors.New("seal: value does not open")
)

// version is the first field of every sealed value; a new layout would take "bcs2".
const version = "bcs1"

// Keyring seals with its primary key and opens with the primary or any older key, which is how
// keys rotate: add a new primary, keep the old ones until every row was re-sealed
// (NeedsRotation tells which), then drop them. A Keyring is safe for concurrent use.
type Keyring struct {
	primary Key
	aeads   map[string]cipher.AEAD
}

// NewKeyring builds a keyring. Key ids must be distinct (the same key twice is refused too).
func NewKeyring(primary Key, older ...Key) (*Keyring, error) {
	kr := &Keyring{primary: primary, aeads: make(map[string]cipher.AEAD, 1+len(older))}
	for i, k := range append([]Key{primary}, older...) {
		if !k.valid() {
			return nil, fmt.Errorf("%w: key %d is empty", ErrInvalidKey, i)
		}
		if _, dup := kr.aeads[k.id]; dup {
			return nil, fmt.Errorf("%w: key id %s given twice", ErrInvalidKey, k.id)
		}
		block, err := aes.NewCipher(k.material)
		if err != nil {
			return nil, fmt.Errorf("seal: key %s: %w", k.id, err)
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, fmt.Errorf("seal: key %s: %w", k.id, err)
		}
		kr.aeads[k.id] = aead
	}
	return kr, nil
}

// PrimaryID is the id of the key new values are sealed with.
func (kr *Keyring) PrimaryID() string { return kr.primary.id }

// Seal encrypts plaintext with the primary key, bound to associatedData, and returns the text
// form "bcs1:<key id>:<base64url(nonce|ciphertext|tag)>", fit for a TEXT column. The same
// associatedData must be given to Open. Each call draws a fresh random nonce, so sealing the
// same secret twice gives two different values.
func (kr *Keyring) Seal(plaintext, associatedData []byte) (string, error) {
	aead := kr.aeads[kr.primary.id]
	nonce := make([]byte, aead.NonceSize(), aead.NonceSize()+len(plaintext)+aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return "", fmt.Errorf("seal: nonce: %w", err)
	}
	out := aead.Seal(nonce, nonce, plaintext, aad(kr.primary.id, associatedData))
	return version + ":" + kr.primary.id + ":" + base64.RawURLEncoding.EncodeToString(out), nil
}

// Open authenticates and decrypts a value made by Seal with the same associatedData.
func (kr *Keyring) Open(sealed string, associatedData []byte) ([]byte, error) {
	id, body, err := split(sealed)
	if err != nil {
		return nil, err
	}
	aead, ok := kr.aeads[id]
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrUnknownKey, id)
	}
	raw, err := base64.RawURLEncoding.DecodeString(body)
	if err != nil || len(raw) < aead.NonceSize()+aead.Overhead() {
		return nil, ErrMalformed
	}
	nonce, ct := raw[:aead.NonceSize()], raw[aead.NonceSize():]
	pt, err := aead.Open(nil, nonce, ct, aad(id, associatedData))
	if err != nil {
		// The GCM error says nothing useful; ours says what may have happened.
		return nil, ErrOpen
	}
	return pt, nil
}

// SealSecret seals a Secret; see Seal.
func (kr *Keyring) SealSecret(s Secret, associatedData []byte) (string, error) {
	return kr.Seal([]byte(s), associatedData)
}

// OpenSecret opens a value into a Secret, which stays redacted wherever it is printed.
func (kr *Keyring) OpenSecret(sealed string, associatedData []byte) (Secret, error) {
	pt, err := kr.Open(sealed, associatedData)
	if err != nil {
		return "", err
	}
	return Secret(pt), nil
}

// NeedsRotation reports whether sealed was made by a key other than the primary (or cannot be
// read at all), so a background pass can re-seal it: Open, then Seal with the same data.
func (kr *Keyring) NeedsRotation(sealed string) bool {
	id, _, err := split(sealed)
	return err != nil || id != kr.primary.id
}

// KeyID returns the id of the key that sealed a value, without opening it.
func KeyID(sealed string) (string, error) {
	id, _, err := split(sealed)
	return id, err
}

func split(sealed string) (id, body string, err error) {
	parts := strings.Split(sealed, ":")
	if len(parts) != 3 || parts[0] != version || parts[1] == "" || parts[2] == "" {
		return "", "", ErrMalformed
	}
	return parts[1], parts[2], nil
}

// aad binds the layout version and the key id as well as the caller's data, so neither header
// field can be edited without the value failing to open.
func aad(keyID string, associatedData []byte) []byte {
	b := make([]byte, 0, len(version)+len(keyID)+2+len(associatedData))
	b = append(b, version...)
	b = append(b, 0)
	b = append(b, keyID...)
	b = append(b, 0)
	return append(b, associatedData...)
}
