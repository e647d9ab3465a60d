package controller

import (
	"encoding/base64"
	"fmt"
	"io"
)

// Uuid is a topic id. It prints like Kafka's: 22 characters of unpadded
// base64url.
type Uuid [16]byte

// String returns the unpadded base64url form Kafka clients print.
func (u Uuid) String() string { return base64.RawURLEncoding.EncodeToString(u[:]) }

// IsZero reports whether u is the all-zero id, which Kafka reserves for "no id".
func (u Uuid) IsZero() bool { return u == Uuid{} }

// MarshalText encodes u as its String form; records store ids this way.
func (u Uuid) MarshalText() ([]byte, error) { return []byte(u.String()), nil }

// UnmarshalText parses the String form.
func (u *Uuid) UnmarshalText(b []byte) error {
	parsed, err := ParseUuid(string(b))
	if err != nil {
		return err
	}
	*u = parsed
	return nil
}

// ParseUuid parses the unpadded base64url form produced by String.
func ParseUuid(s string) (Uuid, error) {
	var u Uuid
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) != len(u) {
		return u, fmt.Errorf("%w: %q", ErrBadUuid, s)
	}
	copy(u[:], b)
	return u, nil
}

// metadataTopicID is the id Kafka reserves for its own metadata topic
// (all zero but the last bit); we never hand it out either.
var metadataTopicID = Uuid{15: 1}

// NewUuid draws a random topic id from r. Like Kafka it retries ids that are
// all zero, the reserved metadata-topic id, or whose text form starts with
// '-' (which command-line tools would read as a flag). It panics if r fails:
// the controller reads crypto/rand, which does not fail.
func NewUuid(r io.Reader) Uuid {
	for {
		var u Uuid
		if _, err := io.ReadFull(r, u[:]); err != nil {
			panic(fmt.Sprintf("controller: NewUuid: reading randomness: %v", err))
		}
		if u.IsZero() || u == metadataTopicID || u.String()[0] == '-' {
			continue
		}
		return u
	}
}
