package config

import (
	"encoding/base64"
	"fmt"
	"strings"
)

// validateClusterID checks cluster.id (CLUSTER_ID) as Kafka's storage tool
// and broker do with Uuid.fromString: a URL-safe base64 encoding of 16 bytes,
// 22 characters without padding (24 with "=="), such as the output of
// kafka-storage.sh random-uuid. The messages keep Kafka's wording, so a
// search for the error finds Kafka's answers too.
func validateClusterID(s string) error {
	if s == "" {
		return nil // unset: the node generates one
	}
	const prefix = "Cluster ID string %s does not appear to be a valid UUID: "
	if len(s) > 24 {
		return fmt.Errorf(prefix+"Input string with prefix `%s` is too long to be decoded as a base64 UUID", s, s[:24])
	}
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "="))
	if ce, ok := err.(base64.CorruptInputError); ok && int(ce) < len(s) && !isBase64URL(s[ce]) {
		return fmt.Errorf(prefix+"Illegal base64 character %x", s, s[ce])
	}
	if err != nil {
		return fmt.Errorf(prefix+"Input string `%s` is not base64: %v", s, s, err)
	}
	if len(raw) != 16 {
		return fmt.Errorf(prefix+"Input string `%s` decoded as %d bytes, which is not equal to the expected 16 bytes of a base64-encoded UUID", s, s, len(raw))
	}
	return nil
}

func isBase64URL(c byte) bool {
	return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_'
}
