package config

import (
	"crypto/subtle"
	"fmt"
	"log/slog"
)

// Redacted is what every formatting and encoding path prints for a Secret.
const Redacted = "[redacted]"

// Secret holds a credential (caller token, admin token, upstream API key).
// Every way of printing or encoding it — fmt verbs including %#v and %d,
// slog, JSON, text and YAML marshaling — yields Redacted, so a Secret that
// ends up in a log line or a struct dump leaks nothing. Only Reveal returns
// the value, which makes each use of it visible in review.
type Secret struct{ value string }

// Reveal returns the credential. Use it only to put the value on the wire.
func (s Secret) Reveal() string { return s.value }

// IsZero reports whether no credential is held.
func (s Secret) IsZero() bool { return s.value == "" }

// Matches compares candidate with the credential in constant time (for
// equal lengths). A zero Secret matches nothing, not even "".
func (s Secret) Matches(candidate string) bool {
	if s.value == "" {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(s.value), []byte(candidate)) == 1
}

func (s Secret) redacted() string {
	if s.value == "" {
		return ""
	}
	return Redacted
}

// String returns Redacted (or "" for a zero Secret).
func (s Secret) String() string { return s.redacted() }

// GoString returns Redacted so %#v dumps stay clean.
func (s Secret) GoString() string { return fmt.Sprintf("config.Secret(%q)", s.redacted()) }

// Format makes every fmt verb print the redacted form.
func (s Secret) Format(f fmt.State, verb rune) {
	if verb == 'v' && f.Flag('#') {
		_, _ = f.Write([]byte(s.GoString()))
		return
	}
	_, _ = f.Write([]byte(s.redacted()))
}

// LogValue keeps slog output redacted.
func (s Secret) LogValue() slog.Value { return slog.StringValue(s.redacted()) }

// MarshalText keeps encoding/json, YAML and friends redacted.
func (s Secret) MarshalText() ([]byte, error) { return []byte(s.redacted()), nil }
