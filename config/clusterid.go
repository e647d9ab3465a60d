package config

import (
	"fmt"
	"strings"
	"unicode"
)

// validateClusterID checks cluster.id (CLUSTER_ID). Kafka 4.4's storage tool
// and broker take any string as the cluster id (measured: `kafka-storage.sh
// format -t "my.cluster id:x"` formats, and the broker starts and names that
// cluster); Kafka 3.x refused what Uuid.fromString could not decode, and
// kafka-storage.sh random-uuid still makes the usual 22-character base64url
// id. samsa takes any string too, except one with a control character,
// which could not be kept on its line of meta.properties.
func validateClusterID(s string) error {
	if i := strings.IndexFunc(s, unicode.IsControl); i >= 0 {
		return fmt.Errorf("cluster id %q has a control character at byte %d", s, i)
	}
	return nil
}
