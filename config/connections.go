package config

import (
	"fmt"
	"strconv"
	"strings"
)

// parseConnectionOverrides parses max.connections.per.ip.overrides, Kafka's
// "host:count,host:count" map. The count follows the last colon, so IPv6
// addresses can be keys. Host names are kept as given; the broker resolves
// them.
func parseConnectionOverrides(s string) (map[string]int32, error) {
	out := map[string]int32{}
	for _, item := range parseList(s) {
		i := strings.LastIndex(item, ":")
		if i <= 0 {
			return nil, fmt.Errorf("item %q is not host:count", item)
		}
		host := strings.TrimSpace(item[:i])
		n, err := strconv.ParseInt(strings.TrimSpace(item[i+1:]), 10, 32)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("item %q: count must be an integer >= 0", item)
		}
		out[strings.Trim(host, "[]")] = int32(n)
	}
	return out, nil
}

func validateConnectionOverrides(s string) error {
	_, err := parseConnectionOverrides(s)
	return err
}
