package seal

import "log/slog"

// Redacted is what a Secret prints as, everywhere.
const Redacted = "[redacted]"

// Secret is a credential held in memory (an unsealed token or password). It prints as
// "[redacted]" through fmt (every verb, %#v included), encoding/json and log/slog, so passing
// one to a logger or an error by mistake leaks nothing. Reveal is the one way to read it.
type Secret string

// Reveal returns the secret's value, for the one call that must send it (a BMC login, an API
// token header). Never pass the result to a logger, an error or a response.
func (s Secret) Reveal() string { return string(s) }

// IsZero reports whether no secret is set (the API reports "credentials set", never the value).
func (s Secret) IsZero() bool { return s == "" }

// String implements fmt.Stringer.
func (s Secret) String() string { return Redacted }

// GoString implements fmt.GoStringer, for %#v.
func (s Secret) GoString() string { return `seal.Secret("` + Redacted + `")` }

// MarshalJSON writes "[redacted]", so a struct holding a Secret can be serialised safely.
func (s Secret) MarshalJSON() ([]byte, error) { return []byte(`"` + Redacted + `"`), nil }

// MarshalText writes "[redacted]" for encoders that use it (encoding/json does not for map
// keys of a string type: never key a map by a Secret).
func (s Secret) MarshalText() ([]byte, error) { return []byte(Redacted), nil }

// LogValue implements slog.LogValuer.
func (s Secret) LogValue() slog.Value { return slog.StringValue(Redacted) }
